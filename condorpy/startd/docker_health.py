"""The Docker runtime as every slot's ad shows it, kept current.

At start-up the startd asks the client named by ``DOCKER`` for its version, the daemon
for an answer and its images' size (``HasDocker``, ``DockerVersion``,
``DockerCachedImageSizeMb``, ``HasContainer``; ``HasSingularity`` false), and removes
the containers a previous startd of this execute directory left behind. A starter
whose container could not be made because the daemon was unreachable says so in its
final ad; the slots then advertise ``HasDocker = false`` (with ``DockerOfflineReason``)
until a later check, every ``DOCKER_RECHECK_INTERVAL`` seconds, finds the daemon
answering again.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, MutableMapping

from condorpy.classad import Undefined
from condorpy.config import KnobReader
from condorpy.machine.docker import DEFAULT_DOCKER, DockerCli, DockerFacts, client_env, probe_docker
from condorpy.starter.container_run import remove_left_behind

log = logging.getLogger("condorpy.startd")

RECHECK_KNOB = "CONDORPY_DOCKER_RECHECK_INTERVAL"
# the attributes this module writes, removed before each new set
ATTRS = ("HasDocker", "DockerVersion", "HasContainer", "HasDockerURL", "HasSingularity",
         "DockerCachedImageSizeMb", "DockerOfflineReason")


def slot_attrs(facts: Mapping[str, object]) -> dict[str, object]:
    """What this module put in the machine's facts, for the slot ads: those were built
    before the runtime was probed, so the attributes reach them as the machine's
    readings do (an attribute gone is Undefined)."""
    out: dict[str, object] = {a: facts.get(a, Undefined) for a in ATTRS}
    out.update({k: v for k, v in facts.items()
                if k == "DockerNetworks" or k.startswith("HasDockerVolume")})
    return out


class DockerHealth:
    def __init__(self, facts: MutableMapping[str, object], cli: DockerCli, *,
                 monotonic: Callable[[], float], recheck_s: float, execute: str,
                 changed: Callable[[], None] = lambda: None) -> None:
        self.facts = facts              # the machine's facts every slot ad copies
        self.cli = cli
        self.monotonic = monotonic
        self.recheck_s = recheck_s
        self.execute = execute
        self.changed = changed
        self.current = DockerFacts(None, False)
        self.due: float | None = None

    @classmethod
    def from_config(cls, cfg: KnobReader, facts: MutableMapping[str, object], *,
                    monotonic: Callable[[], float], execute: str,
                    changed: Callable[[], None]) -> DockerHealth | None:
        """None where no client is installed: no container attributes but
        HasSingularity and HasContainer false."""
        path = cfg.get("DOCKER") or DEFAULT_DOCKER
        if not os.access(path, os.X_OK):
            facts.update(DockerFacts(None, False).attrs())
            return None
        # what the administrator offers, as HTCondor's startd advertises it: networks
        # a job may name (DOCKER_NETWORKS) and HasDockerVolume<name> per DOCKER_VOLUMES
        networks = cfg.get("DOCKER_NETWORKS")
        if networks:
            facts["DockerNetworks"] = networks
        for name in re.split(r"[\s,]+", cfg.get("DOCKER_VOLUMES") or ""):
            if name:
                facts[f"HasDockerVolume{name}"] = True
        return cls(facts, DockerCli(path, env=client_env()), monotonic=monotonic,
                   recheck_s=max(1.0, cfg.knob_float(RECHECK_KNOB)),
                   execute=execute, changed=changed)

    def start(self, live_starters: Iterable[int]) -> None:
        self.check()
        if self.current.healthy:
            removed = remove_left_behind(self.cli, self.execute, list(live_starters),
                                         log.warning)
            for name in removed:
                log.info("removed container %s left behind by a previous startd", name)

    def check(self) -> None:
        self.publish(probe_docker(self.cli))

    def failed(self, reason: str) -> None:
        """A starter found the runtime down: unhealthy until the next check succeeds."""
        log.warning("the Docker runtime failed a job: %s; HasDocker is false until it "
                    "answers again", reason)
        self.publish(self.current.failed(reason))

    def publish(self, facts: DockerFacts) -> None:
        before = self.current
        self.current = facts
        for attr in ATTRS:
            self.facts.pop(attr, None)
        self.facts.update(facts.attrs())
        self.due = None if facts.healthy or facts.version is None else \
            self.monotonic() + self.recheck_s
        if before != facts:
            if before.healthy and not facts.healthy:
                log.warning("Docker is unusable: %s", facts.reason)
            elif facts.healthy and not before.healthy:
                log.info("Docker is usable: %s", facts.version)
            self.changed()

    def next_due(self) -> float | None:
        return self.due

    def tick(self, now: float) -> None:
        if self.due is not None and now >= self.due:
            self.check()
