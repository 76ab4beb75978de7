"""The daemon breaks a slot from a reaped starter's clean-up report, by HTCondor's
rules, keeps it broken across a restart while the cause holds, and mends it once the
cause has gone (the resource manager, engine and store in-process, a fake /proc)."""

from __future__ import annotations

from pathlib import Path

from condorpy.machine.volumes import VolumeRemovalFailed
from condorpy.slots.broken import BreakRules, BrokenCode
from condorpy.startd.broken_keeper import BrokenKeeper, ManagerPort
from condorpy.starter.exit_report import (Leftover, build_report, report_path,
                                          write_report)
from tests.startd.rm_rig import Rig

SLEEP = "executable = /bin/sleep\narguments = 300\nrequest_cpus = 1\nrequest_memory = 16\n"
BOOT = "boot-1"


class FakeProc:
    """A /proc with a boot id and the processes told to be there."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "sys/kernel/random").mkdir(parents=True)
        (root / "sys/kernel/random/boot_id").write_text(BOOT + "\n")

    def process(self, pid: int, ticks: int, state: str = "D") -> None:
        (self.root / str(pid)).mkdir()
        fields = [state] + ["0"] * 18 + [str(ticks)] + ["0"] * 5
        (self.root / str(pid) / "stat").write_text(f"{pid} (stuck) {' '.join(fields)}\n")

    def gone(self, pid: int) -> None:
        (self.root / str(pid) / "stat").unlink()
        (self.root / str(pid)).rmdir()


class FakeVolumes:
    def __init__(self) -> None:
        self.kept: list[VolumeRemovalFailed] = []

    def keep(self, failure: VolumeRemovalFailed) -> None:
        self.kept.append(failure)

    def waiting(self) -> list[VolumeRemovalFailed]:
        return list(self.kept)


def _keeper(rig: Rig, proc: FakeProc, rules: BreakRules,
            volumes: FakeVolumes | None = None) -> BrokenKeeper:
    keeper = BrokenKeeper(ManagerPort(rig.rm), rig.store.broken, rules,
                          volumes=lambda: volumes,      # type: ignore[arg-type,return-value]
                          interval_s=60, proc_root=str(proc.root))
    rig.rm.on_starter_gone = keeper.starter_gone
    return keeper


def _end_leaving(rig: Rig, job: str, proc: FakeProc, *, pid: int = 4242,
                 volume: VolumeRemovalFailed | None = None) -> str:
    """The job ends; its starter cleans up, leaves a process (and a volume), reports
    it beside its socket and is reaped. Returns the job's slot."""
    h = rig.handle(job)
    assert h.launched is not None
    slot = h.slot
    rig.says(job, {"event": "done", "ad": {"ExitCode": 0, "ExitBySignal": False}})
    leftovers = []
    if pid:
        proc.process(pid, 777)
        leftovers = [Leftover(pid, 777, "D")]
    report = build_report(job, leftovers=leftovers, cgroup_left=None, volume_left=volume,
                          problems=[], proc_root=str(proc.root))
    assert report is not None
    write_report(report_path(h.launched.socket_path), report)
    rig.launcher.alive_pids.discard(h.launched.pid)
    rig.step(1)
    rig.step(1)
    return slot


def test_leftover_processes_break_nothing_by_default(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "d", cpus=1)
    proc = FakeProc(tmp_path / "proc")
    _keeper(rig, proc, BreakRules())
    rig.submit(SLEEP + "queue 2\n")
    rig.step()
    _end_leaving(rig, "1.0", proc)
    rig.step(1)
    assert rig.engine.broken.items == []
    assert rig.running() == ["1.1"]          # the slot took the next job
    assert not list((tmp_path / "d").glob("*.exit"))      # the report was taken


def test_leftover_processes_break_the_slot_until_they_are_gone(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "d", cpus=1)
    proc = FakeProc(tmp_path / "proc")
    keeper = _keeper(rig, proc, BreakRules(leftover_procs=True))
    rig.submit(SLEEP + "queue 2\n")
    rig.step()
    slot = _end_leaving(rig, "1.0", proc)
    for _ in range(3):
        rig.step(1)
    item = rig.engine.broken.get(slot)
    assert item is not None and item.cause.code is BrokenCode.HUNG_PROCESSES
    assert item.cause.reason == "Could not terminate all job processes"
    assert item.context["JobId"] == "1.0"
    assert rig.running() == []               # its resources are lent to no one
    assert [s for s, _ in rig.store.broken.all()] == [slot]
    keeper.check()                           # still there: still broken
    assert rig.engine.broken.get(slot) is not None
    proc.gone(4242)
    keeper.check()
    assert rig.engine.broken.items == [] and rig.store.broken.all() == []
    rig.step(1)
    rig.step(1)
    assert rig.running() == ["1.1"]


def test_a_volume_left_breaks_the_slot_until_a_retry_removes_it(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "d", cpus=1)
    proc = FakeProc(tmp_path / "proc")
    volumes = FakeVolumes()
    keeper = _keeper(rig, proc, BreakRules(), volumes)
    rig.submit(SLEEP + "queue 1\n")
    rig.step()
    fail = VolumeRemovalFailed("vg", "slot1_1+1001", False, "lvremove: in use")
    slot = _end_leaving(rig, "1.0", proc, pid=0, volume=fail)
    assert [f.volume for f in volumes.kept] == ["slot1_1+1001"]   # retried from now on
    item = rig.engine.broken.get(slot)
    assert item is not None and item.cause.code is BrokenCode.UNCLEAN_VOLUME
    assert rig.engine.broken.daemon_attrs()[f"{slot}BrokenReason"] == \
        "Could not clean up Logical Volume"
    volumes.kept.clear()                     # a retry removed it
    keeper.check()
    assert rig.engine.broken.items == []


def test_a_restart_breaks_the_slot_again_while_the_cause_holds(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "d", cpus=2)
    proc = FakeProc(tmp_path / "proc")
    _keeper(rig, proc, BreakRules(leftover_procs=True))
    rig.submit(SLEEP + "queue 1\n")
    rig.step()
    slot = _end_leaving(rig, "1.0", proc)
    for _ in range(3):
        rig.step(1)
    assert rig.engine.broken.get(slot) is not None
    pslot = rig.engine.slots[slot].parent if slot in rig.engine.slots else "slot1"
    assert pslot is not None
    rig.store.close()
    # the next daemon, on the same store: the process is still there
    again = Rig(tmp_path / "d", cpus=2)
    keeper = _keeper(again, proc, BreakRules(leftover_procs=True))
    keeper.restore(0.0)
    item = again.engine.broken.get(slot)
    assert item is not None and item.context["JobId"] == "1.0"
    assert again.engine.slots[pslot].ad.evaluate("BrokenSlotCpus") == 1
    assert again.engine.slots[pslot].ad.evaluate("Cpus") == 1
    proc.gone(4242)
    keeper.check()
    assert again.engine.slots[pslot].ad.evaluate("Cpus") == 2
    again.store.close()
    # and the one after: nothing left to restore
    third = Rig(tmp_path / "d", cpus=2)
    _keeper(third, proc, BreakRules(leftover_procs=True)).restore(0.0)
    assert third.engine.broken.items == [] and third.store.broken.all() == []


def test_a_restart_after_the_cause_went_forgets_the_slot(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "d", cpus=1)
    proc = FakeProc(tmp_path / "proc")
    _keeper(rig, proc, BreakRules(leftover_procs=True))
    rig.submit(SLEEP + "queue 1\n")
    rig.step()
    _end_leaving(rig, "1.0", proc)
    rig.step(1)
    assert rig.store.broken.all() != []
    rig.store.close()
    proc.gone(4242)
    again = Rig(tmp_path / "d", cpus=1)
    _keeper(again, proc, BreakRules(leftover_procs=True)).restore(0.0)
    assert again.engine.broken.items == [] and again.store.broken.all() == []


def test_the_cgroup_of_leftovers_that_broke_nothing_is_removed_once_they_end(
        tmp_path: Path) -> None:
    rig = Rig(tmp_path / "d", cpus=1)
    proc = FakeProc(tmp_path / "proc")
    keeper = _keeper(rig, proc, BreakRules())
    rig.submit(SLEEP + "queue 1\n")
    rig.step()
    h = rig.handle("1.0")
    assert h.launched is not None
    cgroup = tmp_path / "job_1.slice"
    (cgroup / "job.scope").mkdir(parents=True)
    proc.process(4242, 777)
    report = build_report("1.0", leftovers=[Leftover(4242, 777, "D")],
                          cgroup_left=str(cgroup), volume_left=None, problems=[],
                          proc_root=str(proc.root))
    assert report is not None
    rig.says("1.0", {"event": "done", "ad": {"ExitCode": 0, "ExitBySignal": False}})
    write_report(report_path(h.launched.socket_path), report)
    rig.launcher.alive_pids.discard(h.launched.pid)
    rig.step(1)
    assert rig.engine.broken.items == [] and keeper.next_due() is not None
    keeper.check()
    assert cgroup.is_dir()                   # its process is still there
    proc.gone(4242)
    keeper.check()
    assert not cgroup.exists() and keeper.next_due() is None
