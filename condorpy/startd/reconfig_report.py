"""What a reconfig did, as the person who asked for it is told: the knobs that changed,
those that take a restart to apply, and where the slot layout stands.

Pure: the daemon hands in what changed and what it could apply; the decision which
knobs the running daemon cannot change is made here, once, for the reply and the log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Read when the machine is measured, at start only: the inventory the slots are carved
# from (CPUs, memory, disk, custom resources and GPUs) and where the state lives.
_AT_START = frozenset({
    "NUM_CPUS", "MAX_NUM_CPUS", "MEMORY", "RESERVED_MEMORY", "RESERVED_DISK",
    "RESERVED_SWAP", "COUNT_HYPERTHREAD_CPUS", "DISK", "EXECUTE",
    "STARTD_DETECT_GPUS", "GPU_DISCOVERY_EXTRA",
    "LOCAL_DIR", "LOG", "SPOOL", "LOCK", "CONDORPY_CONTROL_SOCKET",
    # the names the pool knows this EP by (HTCondor too reads them at start only)
    "STARTD_NAME", "NETWORK_HOSTNAME",
})
_SLOT_EXECUTE = re.compile(r"SLOT\d+_EXECUTE")
# The pool's command port is bound once (a changed collector is followed live).
_POOL_PORT = frozenset({"NETWORK_INTERFACE", "STARTD_PORT"})

# `condorpy reconfig`'s exit status when the new configuration is in force except for
# knobs that take a restart: a script can tell it from success (0) and refusal (1).
EXIT_RESTART_NEEDED = 3


def needs_restart(changed: set[str], pool_before: bool, pool_after: bool) -> list[str]:
    """The changed knobs the running daemon cannot apply, sorted. ``pool_before`` and
    ``pool_after``: whether a pool (COLLECTOR_HOST) was configured before and after."""
    out = set()
    for knob in changed:
        name = knob.upper()
        if name in _AT_START or name.startswith("MACHINE_RESOURCE_") or \
                _SLOT_EXECUTE.fullmatch(name):
            out.add(knob)
        elif name in _POOL_PORT and pool_before and pool_after:
            out.add(knob)
        elif name == "COLLECTOR_HOST" and pool_before != pool_after:
            out.add(knob)       # joining or leaving a pool
    return sorted(out)


@dataclass(frozen=True)
class ReconfigReport:
    changed: tuple[str, ...]
    restart_needed: tuple[str, ...] = ()
    layout: str | None = None        # the slot layout's change, when there is one

    def to_reply(self) -> dict[str, Any]:
        return {"changed": list(self.changed), "restart_needed": list(self.restart_needed),
                "layout": self.layout}

    @classmethod
    def from_reply(cls, reply: Any) -> ReconfigReport:
        """A reply as a client gets it: a daemon that predates reports answers with
        the list of changed knobs alone."""
        if isinstance(reply, list):
            return cls(tuple(str(x) for x in reply))
        if not isinstance(reply, dict):
            return cls(())
        layout = reply.get("layout")
        return cls(tuple(str(x) for x in reply.get("changed") or ()),
                   tuple(str(x) for x in reply.get("restart_needed") or ()),
                   layout if isinstance(layout, str) else None)

    def restart_line(self) -> str | None:
        """What the administrator must be told, or None when all is applied."""
        if not self.restart_needed:
            return None
        return (f"{', '.join(self.restart_needed)} changed but take(s) effect only when "
                f"the daemon starts: run `condorpy restart` (running jobs keep running)")
