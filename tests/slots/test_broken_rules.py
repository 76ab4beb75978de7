"""Which clean-up failures break a slot and when the cause has gone (pure rules, as
HTCondor's startd decides them), the starter's report and its exit status, and the
d-slot names a broken slot keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.errors import StarterError
from condorpy.machine.volumes import VolumeRemovalFailed
from condorpy.slots import broken
from condorpy.slots.broken import (BreakRules, BrokenCause, BrokenCode, LeftBehind,
                                   cleanup_cause, still_broken)
from condorpy.slots.resources import Resources
from condorpy.starter.exit_report import (CleanupReport, Leftover, StarterExit,
                                          build_report, exit_code, report_path,
                                          take_report, write_report)
from condorpy.classad import ClassAd
from condorpy.slots.model import Slot
from tests.slots.helpers import gpu_machine, manager

DEFAULT = BreakRules()


def test_the_starter_and_the_startd_share_htcondors_exit_statuses() -> None:
    assert (int(StarterExit.IMMORTAL_LVM), int(StarterExit.IMMORTAL_JOB_PROCESS),
            int(StarterExit.CGROUP_LOCKED)) == (15, 16, 18)
    assert (broken.EXIT_IMMORTAL_LVM, broken.EXIT_IMMORTAL_JOB_PROCESS,
            broken.EXIT_CGROUP_LOCKED) == (15, 16, 18)


def test_knob_defaults_are_htcondors() -> None:
    assert DEFAULT.leftover_procs is False      # 24.5.2
    assert DEFAULT.volume_failure is True       # 25.5.1


def test_leftover_processes_break_only_with_the_knob() -> None:
    left = LeftBehind(16, processes=True, cgroup=True)
    assert cleanup_cause(left, DEFAULT) is None
    cause = cleanup_cause(left, BreakRules(leftover_procs=True))
    assert cause == BrokenCause(BrokenCode.HUNG_PROCESSES,
                                "Could not terminate all job processes")
    # gone by the time the startd looked: nothing to break
    assert cleanup_cause(LeftBehind(16), BreakRules(leftover_procs=True)) is None


def test_a_volume_left_breaks_while_it_is_there_and_the_knob_says_so() -> None:
    cause = cleanup_cause(LeftBehind(15, volume=True), DEFAULT)
    assert cause is not None and cause.code is BrokenCode.UNCLEAN_VOLUME
    assert cause.reason == "Could not clean up Logical Volume"
    assert cleanup_cause(LeftBehind(15, volume=False), DEFAULT) is None
    assert cleanup_cause(LeftBehind(15, volume=True), BreakRules(volume_failure=False)) \
        is None


def test_a_cgroup_left_without_processes_breaks_and_a_sandbox_does_not() -> None:
    cause = cleanup_cause(LeftBehind(18, cgroup=True), DEFAULT)
    assert cause is not None and cause.code is BrokenCode.HUNG_CGROUP
    assert cause.reason == "Could not cleanup CGroup for slot"
    assert cleanup_cause(LeftBehind(18, cgroup=False), DEFAULT) is None
    assert cleanup_cause(LeftBehind(0), BreakRules(leftover_procs=True)) is None


def test_a_cause_holds_while_what_it_names_is_there() -> None:
    assert still_broken(BrokenCode.HUNG_PROCESSES, LeftBehind(16, processes=True))
    assert not still_broken(BrokenCode.HUNG_PROCESSES, LeftBehind(16, cgroup=True))
    assert still_broken(BrokenCode.UNCLEAN_VOLUME, LeftBehind(15, volume=True))
    assert not still_broken(BrokenCode.UNCLEAN_VOLUME, LeftBehind(15))
    assert not still_broken(BrokenCode.HUNG_CGROUP, LeftBehind(18))
    assert still_broken(BrokenCode.UNCLEAN, LeftBehind(0))     # until a restart


def test_exit_status_prefers_the_volume_then_the_processes() -> None:
    assert exit_code(volume_left=True, leftovers=True, cgroup_left=True) \
        is StarterExit.IMMORTAL_LVM
    assert exit_code(volume_left=False, leftovers=True, cgroup_left=True) \
        is StarterExit.IMMORTAL_JOB_PROCESS
    assert exit_code(volume_left=False, leftovers=False, cgroup_left=True) \
        is StarterExit.CGROUP_LOCKED
    assert exit_code(volume_left=False, leftovers=False, cgroup_left=False) \
        is StarterExit.NORMAL


def test_no_report_when_nothing_was_left(tmp_path: Path) -> None:
    assert build_report("1.0", leftovers=[], cgroup_left=None, volume_left=None,
                        problems=[], proc_root=str(tmp_path)) is None


def test_a_report_goes_whole_beside_the_socket_and_is_taken_once(tmp_path: Path) -> None:
    fail = VolumeRemovalFailed("vg", "slot1_1+77", True, "lvremove: busy", "slot1_1")
    report = build_report("3.1", leftovers=[Leftover(40, 1234, "D")], cgroup_left="/cg",
                          volume_left=fail, problems=["sandbox /x: busy"],
                          proc_root=str(tmp_path))
    assert report is not None and report.code is StarterExit.IMMORTAL_LVM
    sock = str(tmp_path / "starter_77.sock")
    path = report_path(sock)
    assert path == str(tmp_path / "starter_77.exit")
    write_report(path, report)
    assert [p.name for p in tmp_path.iterdir()] == ["starter_77.exit"]
    back = take_report(path)
    assert back == report and back.volume == "slot1_1+77" and back.volume_encrypted
    assert take_report(path) is None


def test_a_damaged_report_is_an_error_and_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "starter_1.exit"
    path.write_text("{not json")
    with pytest.raises(StarterError, match="cleanup report"):
        take_report(str(path))
    assert not path.exists()
    assert CleanupReport.from_json('{"code": 16, "job_id": "1.0"}', "x").code \
        is StarterExit.IMMORTAL_JOB_PROCESS


def _job() -> ClassAd:
    ad = ClassAd()
    for k, v in {"RequestCpus": 1, "RequestMemory": 100, "RequestDisk": 1}.items():
        ad[k] = v
    return ad


def test_a_broken_dslots_name_is_not_given_to_a_new_dslot() -> None:
    mgr = manager(gpu_machine(), ("100%", 1, True))
    pslot = mgr.get("slot1")
    first = mgr.carve(pslot, _job())
    assert isinstance(first, Slot) and first.name == "slot1_1"
    mgr.drop_broken(first)
    second = mgr.carve(pslot, _job())
    assert isinstance(second, Slot) and second.name == "slot1_2"
    mgr.give_back("slot1", first.resources, first.sub_id)
    third = mgr.carve(pslot, _job())
    assert isinstance(third, Slot) and third.name == "slot1_1"


def test_an_earlier_daemons_broken_dslot_is_lost_again_if_there_is_room() -> None:
    mgr = manager(gpu_machine(), ("100%", 1, True))
    pslot = mgr.get("slot1")
    before = mgr.available(pslot)
    lost = Resources(2, 1024, 10)
    assert mgr.take_lost("slot1", lost, 3)
    assert mgr.available(pslot).cpus == before.cpus - 2
    assert not mgr.take_lost("slot1", Resources(before.cpus, 1, 1), 4)   # not that much
    assert mgr.available(pslot).cpus == before.cpus - 2
    d = mgr.carve(pslot, _job())
    assert isinstance(d, Slot) and d.name == "slot1_1"     # 3 is still the broken one's
