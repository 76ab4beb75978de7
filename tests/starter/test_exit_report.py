"""What a starter tells the startd of the job processes its final kill left: the
family's live members (pid, start time, state), none when the kill left nothing."""

from __future__ import annotations

from pathlib import Path

from condorpy.starter.exit_report import Leftover
from condorpy.starter.proctrack import JobProcesses, ProcessFamily


def _proc(root: Path, pid: int, ppid: int, session: int, state: str, ticks: int) -> None:
    (root / str(pid)).mkdir(parents=True)
    fields = [state, str(ppid), str(session), str(session)] + ["0"] * 15 + [str(ticks)] \
        + ["0"] * 5
    (root / str(pid) / "stat").write_text(f"{pid} (job x) {' '.join(fields)}\n")


def test_the_family_members_a_kill_left_are_reported_with_their_state(
        tmp_path: Path) -> None:
    _proc(tmp_path, 500, 1, 500, "S", 10)           # the job's first process
    _proc(tmp_path, 501, 500, 500, "D", 11)         # its child, in uninterruptible sleep
    _proc(tmp_path, 502, 500, 500, "Z", 12)         # a zombie is gone
    _proc(tmp_path, 900, 1, 900, "S", 13)           # not the job's
    family = ProcessFamily(str(tmp_path), 500, 500)
    procs = JobProcesses(500, family=family)
    assert procs.leftovers(str(tmp_path)) == []     # no kill left anything
    procs.left = 2
    assert procs.leftovers(str(tmp_path)) == [Leftover(500, 10, "S"), Leftover(501, 11, "D")]
