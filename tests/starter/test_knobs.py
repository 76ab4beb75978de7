from __future__ import annotations

import pytest

from condorpy.errors import ConfigError
from condorpy.starter.knobs import settings_from_knobs
from condorpy.starter.settings import MemoryPolicy


def lookup_of(values: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda name: values.get(name)


def test_knobs_become_settings() -> None:
    knobs = {"CGROUP_MEMORY_LIMIT_POLICY": "Hard", "DISABLE_SWAP_FOR_JOB": "True",
             "USE_PID_NAMESPACES": "yes", "STARTER_ALLOW_RUNAS_OWNER": "false",
             "SLOT2_USER": "slotuser2", "BASE_CGROUP": "htcondor",
             "CONDORPY_CGROUP_PIDS_MAX": "512", "KILLING_TIMEOUT": "10",
             "FULL_HOSTNAME": "ep.example.org"}
    s = settings_from_knobs(lookup_of(knobs), execute="/x", names=list(knobs))
    assert s.memory_policy is MemoryPolicy.HARD and s.disable_swap
    assert s.use_pid_namespaces and not s.allow_runas_owner
    assert s.slot_users == {2: "slotuser2"} and s.cgroup_base == "htcondor"
    assert s.pids_max == 512 and s.kill_timeout_s == 10.0
    assert s.hostname == "ep.example.org"


def test_defaults() -> None:
    s = settings_from_knobs(lookup_of({"FULL_HOSTNAME": "h"}), execute="/x", names=[])
    assert s.memory_policy is MemoryPolicy.NONE and s.allow_runas_owner
    assert s.pids_max is None and s.cgroup_base is None and not s.use_pid_namespaces


@pytest.mark.parametrize("name,value", [("CGROUP_MEMORY_LIMIT_POLICY", "strict"),
                                        ("DISABLE_SWAP_FOR_JOB", "maybe"),
                                        ("KILLING_TIMEOUT", "soon")])
def test_bad_values_name_the_knob(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        settings_from_knobs(lookup_of({name: value, "FULL_HOSTNAME": "h"}),
                            execute="/x", names=[name])
