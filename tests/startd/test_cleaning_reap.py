"""The daemon keeps a slot in Claimed/Cleaning while the starter of its ended job is
still running (removing the sandbox, killing leftovers), and frees it once reaped."""

from __future__ import annotations

from pathlib import Path

from condorpy.slots.broken import BrokenCause, BrokenCode
from condorpy.startd.broken_keeper import ManagerPort
from tests.startd.rm_rig import Rig

SLEEP = "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\n"


def test_a_cleaning_slot_takes_no_new_job_until_its_starter_is_reaped(tmp_path: Path) -> None:
    rig = Rig(tmp_path, cpus=1)
    rig.submit(SLEEP + "queue 2\n")
    rig.step()
    assert rig.running() == ["1.0"]
    h = rig.handle("1.0")
    assert h.launched is not None
    # the final word comes, the starter process stays (cleaning up)
    rig.says("1.0", {"event": "done", "ad": {"ExitCode": 0, "ExitBySignal": False}})
    assert rig.attr("1.0", "JobStatus") == 4
    for _ in range(3):
        rig.step(1)
    assert ("Claimed", "Cleaning") in rig.slot_states()
    assert rig.running() == []
    assert [r.job_id for r in rig.launcher.requests] == ["1.0"]
    rig.launcher.alive_pids.discard(h.launched.pid)     # the starter is reaped
    rig.step(1)
    rig.step(1)
    assert rig.running() == ["1.1"]
    assert ("Claimed", "Cleaning") not in rig.slot_states()


def test_a_slot_broken_while_cleaning_is_lent_to_no_job_until_mended(tmp_path: Path) -> None:
    rig = Rig(tmp_path, cpus=1)
    rig.submit(SLEEP + "queue 2\n")
    rig.step()
    h = rig.handle("1.0")
    assert h.launched is not None
    slot = h.slot
    rig.says("1.0", {"event": "done", "ad": {"ExitCode": 0, "ExitBySignal": False}})
    # the reaping finds job processes the final kill could not end
    port = ManagerPort(rig.rm)
    port.report_broken(slot, BrokenCause.leftover_processes([777]), {"JobId": "1.0"})
    rig.launcher.alive_pids.discard(h.launched.pid)
    for _ in range(4):
        rig.step(1)
    assert rig.running() == []                      # the second job waits
    assert [r.job_id for r in rig.launcher.requests] == ["1.0"]
    assert rig.engine.broken.get(slot) is not None
    port.mend(slot, BrokenCode.HUNG_PROCESSES)      # the processes are gone
    rig.step(1)
    rig.step(1)
    assert rig.running() == ["1.1"]
    assert rig.engine.broken.items == []
