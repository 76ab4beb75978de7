"""The Docker runtime in the slot ads: probed, marked down by a starter's news, and
restored by a later check (a fake client; the real one runs in test_vm_docker.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from condorpy.config import Config

from condorpy.machine.docker import DockerCli, Ran
from condorpy.startd.docker_health import DockerHealth
from condorpy.startd.job_end import runtime_news

VERSION = "Docker version 20.10.24+dfsg1, build 297e128"


class FakeCli(DockerCli):
    def __init__(self) -> None:
        super().__init__("/fake/docker")
        self.up = True
        self.containers = ["HTCJob1_0_slot1_PID10", "HTCJob2_0_slot1_PID20"]
        self.removed: list[str] = []

    def run(self, args: Sequence[str], *, timeout: float = 0) -> Ran:
        if args[0] == "-v":
            return Ran(0, VERSION + "\n", "")
        if args[0] == "info":
            return Ran(0, "20.10.24\n", "") if self.up else Ran(
                1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock")
        if args[0] == "images":
            return Ran(0, "abc 2.5MB\n", "")
        if args[0] == "ps":
            return Ran(0, "\n".join(self.containers), "")
        if args[0] == "rm":
            self.removed.append(args[-1])
            return Ran(0, "", "")
        return Ran(1, "", "unexpected")


def test_probe_failure_and_recovery() -> None:
    facts: dict[str, object] = {"Arch": "X86_64"}
    now = [100.0]
    changes: list[bool] = []
    cli = FakeCli()
    health = DockerHealth(facts, cli, monotonic=lambda: now[0], recheck_s=60,
                          execute="/x", changed=lambda: changes.append(True))
    health.start(live_starters=[20])
    assert facts["HasDocker"] is True and facts["DockerVersion"] == VERSION
    assert facts["DockerCachedImageSizeMb"] == 3 and facts["HasContainer"] is True
    assert facts["HasSingularity"] is False and facts["Arch"] == "X86_64"
    assert cli.removed == ["HTCJob1_0_slot1_PID10"]      # its starter is gone
    assert health.next_due() is None
    # a starter found the daemon down
    cli.up = False
    health.failed("docker create: the Docker daemon is unreachable")
    assert facts["HasDocker"] is False and facts["HasContainer"] is False
    assert "unreachable" in str(facts["DockerOfflineReason"])
    assert health.next_due() == 160.0
    now[0] = 160.0
    health.tick(now[0])                                 # still down: checked again later
    assert facts["HasDocker"] is False and health.next_due() == 220.0
    cli.up = True
    now[0] = 220.0
    health.tick(now[0])
    assert facts["HasDocker"] is True and "DockerOfflineReason" not in facts
    assert health.next_due() is None and len(changes) >= 2


def test_offered_networks_and_volumes_advertised(tmp_path: Path) -> None:
    client = tmp_path / "docker"
    client.write_text("#!/bin/sh\nexit 1\n")
    client.chmod(0o755)
    cfg = Config.from_mapping({"DOCKER": str(client), "DOCKER_NETWORKS": "lab, lab2",
                               "DOCKER_VOLUMES": "CVMFS DATA"}, source="<t>")
    facts: dict[str, object] = {}
    health = DockerHealth.from_config(cfg, facts, monotonic=lambda: 0.0, execute="/x",
                                      changed=lambda: None)
    assert health is not None
    assert facts == {"DockerNetworks": "lab, lab2", "HasDockerVolumeCVMFS": True,
                     "HasDockerVolumeDATA": True}
    health.check()                  # "docker -v" fails: no Docker here
    assert "HasDocker" not in facts and facts["HasContainer"] is False
    absent = Config.from_mapping({"DOCKER": str(tmp_path / "none")}, source="<t>")
    facts = {}
    assert DockerHealth.from_config(absent, facts, monotonic=lambda: 0.0, execute="/x",
                                    changed=lambda: None) is None
    assert facts == {"HasSingularity": False, "HasContainer": False}


def test_runtime_news_leaves_the_job_ad() -> None:
    said: list[str] = []
    final = {"VacateReasonCode": 1021, "DockerOfflineReason": "down"}
    kept = runtime_news(final, said.append)
    assert said == ["down"] and kept == {"VacateReasonCode": 1021}
    assert runtime_news({"ExitCode": 0}, said.append) == {"ExitCode": 0}
    assert runtime_news(None, said.append) is None and said == ["down"]


def test_slot_attrs_carry_what_the_probe_wrote_and_undefined_for_what_it_took_back() -> None:
    from condorpy.classad import Undefined
    from condorpy.startd.docker_health import slot_attrs
    facts: dict[str, object] = {"Arch": "X86_64", "HasDocker": True, "DockerVersion": VERSION,
                                "HasDockerVolumeSCRATCH": True}
    got = slot_attrs(facts)
    assert got["HasDocker"] is True and got["DockerVersion"] == VERSION
    assert got["DockerOfflineReason"] is Undefined and got["HasDockerVolumeSCRATCH"] is True
    assert "Arch" not in got
