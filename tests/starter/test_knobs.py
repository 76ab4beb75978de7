from __future__ import annotations

import pytest

from condorpy.config import Config, DetectedFacts
from condorpy.errors import ConfigError
from condorpy.starter.knobs import settings_from_knobs
from condorpy.starter.settings import MemoryPolicy

FACTS = DetectedFacts(full_hostname="ep.example.org", cpus=2, cores=2, physical_cpus=2,
                      memory_mb=4096)


def knobs(values: dict[str, str]) -> Config:
    return Config.from_mapping(values, source="starter.conf", detected=FACTS,
                               subsystem="STARTER")


def test_knobs_become_settings() -> None:
    cfg = knobs({"CGROUP_MEMORY_LIMIT_POLICY": "Hard", "DISABLE_SWAP_FOR_JOB": "True",
                 "USE_PID_NAMESPACES": "1", "STARTER_ALLOW_RUNAS_OWNER": "false",
                 "SLOT2_USER": "slotuser2", "BASE_CGROUP": "htcondor",
                 "CONDORPY_CGROUP_PIDS_MAX": "512", "KILLING_TIMEOUT": "10",
                 "FULL_HOSTNAME": "ep.example.org"})
    s = settings_from_knobs(cfg, execute="/x")
    assert s.memory_policy is MemoryPolicy.HARD and s.disable_swap
    assert s.use_pid_namespaces and not s.allow_runas_owner
    assert s.slot_users == {2: "slotuser2"} and s.cgroup_base == "htcondor"
    assert s.pids_max == 512 and s.kill_timeout_s == 10.0
    assert s.hostname == "ep.example.org"


def test_defaults_are_htcondors() -> None:
    s = settings_from_knobs(knobs({}), execute="/x")
    # HTCondor 25's table defaults
    assert s.memory_policy is MemoryPolicy.HARD and s.allow_runas_owner
    assert s.cgroup_base == "htcondor" and s.disable_swap
    assert s.pids_max is None and not s.use_pid_namespaces
    assert s.hostname == "ep.example.org" and s.kill_timeout_s == 30.0


def test_values_are_read_as_htcondor_reads_them() -> None:
    s = settings_from_knobs(knobs({"USE_PID_NAMESPACES": "$(NOT_SET:2) > 1",
                                   "KILLING_TIMEOUT": "2 * 60", "MEMORY": "1024.9"}),
                            execute="/x")
    assert s.use_pid_namespaces and s.kill_timeout_s == 120.0
    assert s.machine_memory_mb == 1024   # a real value is truncated to an integer


@pytest.mark.parametrize("name,value,what", [
    ("CGROUP_MEMORY_LIMIT_POLICY", "strict", "one of none, hard, soft, custom"),
    ("DISABLE_SWAP_FOR_JOB", "maybe", "a boolean"),
    ("USE_PID_NAMESPACES", "on", "a boolean"),      # HTCondor's param_boolean refuses "on"
    ("USE_PID_NAMESPACES", "yes", "a boolean"),
    ("KILLING_TIMEOUT", "soon", "a number"),
    ("MEMORY", "lots", "an integer")])
def test_bad_values_name_the_knob_and_line(name: str, value: str, what: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings_from_knobs(knobs({"FULL_HOSTNAME": "h", name: value}), execute="/x")
    assert str(info.value) == f"{name} = {value} at starter.conf:2 is not {what}"
