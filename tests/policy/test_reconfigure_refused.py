"""A reconfig whose policy expressions do not parse changes nothing (issue #30, case 6):
the settings are refused as they are read, the engine refuses them before it replaces
anything, and a partitionable slot keeps every CPU through any number of tries."""

from __future__ import annotations

from dataclasses import replace

import pytest

from condorpy.clock import ManualClock
from condorpy.errors import ConfigError, PolicyError
from condorpy.policy.records import ClaimAccepted
from condorpy.policy.settings import settings_from_config

from tests.policy.engines import core_from_text

PARTITIONABLE = ("NUM_CPUS = 4\nMEMORY = 4096\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\n"
                 "SLOT_TYPE_1_PARTITIONABLE = True\n")
JOB = {"RequestCpus": 1, "RequestMemory": 64, "RequestDisk": 1, "Owner": "alice",
       "JobUniverse": 5}


@pytest.mark.parametrize("knob", ["START", "SLOT1_START", "SLOT_TYPE_1_RANK", "PREEMPT"])
def test_settings_with_an_expression_that_does_not_parse_are_refused(knob: str) -> None:
    core = core_from_text(PARTITIONABLE + f"\n{knob} = (Owner == \"x\"\n")
    with pytest.raises(ConfigError) as info:
        settings_from_config(core.config, {1: 1})
    assert str(info.value).startswith(f"{knob} is not") and info.value.line == 7


def test_the_engine_refuses_bad_settings_whole_and_keeps_its_cpus() -> None:
    clock = ManualClock(100.0)
    eng = core_from_text(PARTITIONABLE).engine(clock)
    eng.cycle(clock.time())
    good = eng.settings
    bad = replace(good, exprs={**good.exprs, "RANK": "1", "START": "(Owner == \"x\""})
    for n in range(3):
        with pytest.raises(PolicyError):
            eng.reconfigure(bad)
        assert eng.settings is good
        assert str(eng.slots["slot1"].ad.lookup("RANK")) == good.exprs["RANK"]
        out = eng.request_claim(100.0 + n, f"c{n}", JOB, "slot1")
        assert [a for a in out if isinstance(a, ClaimAccepted)], out
        assert eng.slots["slot1"].resources["Cpus"] == 3 - n
