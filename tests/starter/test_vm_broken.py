"""A job process the final kill cannot end, on a real kernel (the `tests/vm/run` lane,
as root): the starter reports it, the startd's keeper breaks the slot, and mends it
once the process has gone.

The process is a read with O_DIRECT from a device-mapper device that is suspended: it
waits for its I/O in uninterruptible sleep (state D) and SIGKILL, cgroup.kill included,
takes effect only once the device is resumed and the read ends. That is the case
HTCondor's leftover-process rule is for (a hung file server, a dead disk), made on
demand and undone at will with the modules the lane already loads (loop, dm-mod); a
process that merely ignores SIGTERM would die of the final SIGKILL and prove nothing.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from condorpy.slots.broken import BreakRules, BrokenCause, BrokenCode, BrokenItem, \
    BrokenLedger
from condorpy.slots.resources import Resources
from condorpy.startd.broken_keeper import BrokenKeeper
from condorpy.starter.exit_report import StarterExit, report_path, take_report

from .helpers import run
from .test_vm_cgroup import settings, work  # noqa: F401

pytestmark = pytest.mark.vm
NAME = "condorpy-stuck"


def _tool(name: str) -> str:
    return shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin") or name


def _sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True,
                          timeout=60).stdout.strip()


@pytest.fixture
def stuck_device(tmp_path: Path) -> Iterator[str]:
    """A suspended dm-linear device over a loop device: a read from it waits."""
    image = tmp_path / "disk.img"
    with open(image, "wb") as fh:
        fh.truncate(1 << 20)
    loop = _sh(_tool("losetup"), "--find", "--show", str(image))
    dmsetup = _tool("dmsetup")
    udev = ("--noudevsync", "--noudevrules")
    _sh(dmsetup, *udev, "create", NAME, "--table", f"0 2048 linear {loop} 0")
    # no udev here to make the node: one of our own, that nobody (the job) may read
    major, minor = _sh(dmsetup, "info", "-c", "--noheadings", "-o", "major,minor",
                       NAME).split(":")
    dev = f"/dev/{NAME}"
    os.mknod(dev, stat.S_IFBLK | 0o666, os.makedev(int(major), int(minor)))
    os.chmod(dev, 0o666)
    try:
        _sh(dmsetup, *udev, "suspend", NAME)
        yield dev
    finally:
        os.unlink(dev)
        subprocess.run((dmsetup, *udev, "resume", NAME), timeout=60)
        for _ in range(600):
            if subprocess.run((dmsetup, *udev, "remove", NAME), capture_output=True,
                              timeout=60).returncode == 0:
                break
            time.sleep(0.1)                # the killed reader still holds it open
        subprocess.run((_tool("losetup"), "-d", loop), timeout=60)


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(") ")[2].split()[0]
    except OSError:
        return None


class Slots:
    """The keeper's port: a ledger standing in for the engine."""

    def __init__(self) -> None:
        self.ledger = BrokenLedger()
        self.mended: list[str] = []

    def report_broken(self, slot: str, cause: BrokenCause,
                      context: Mapping[str, Any] | None = None) -> None:
        self.ledger.report_broken(BrokenItem(slot, "slot1", cause, Resources(1, 64, 1024),
                                             1, dict(context or {})))

    def restore_broken(self, item: BrokenItem) -> None:
        self.ledger.report_broken(item)

    def mend(self, slot: str, code: BrokenCode | None = None) -> None:
        if self.ledger.mend(slot, code) is not None:
            self.mended.append(slot)

    def broken_item(self, slot: str) -> BrokenItem | None:
        return self.ledger.get(slot)

    def slot_of_claim(self, claim_id: str) -> str | None:
        return "slot1_1"


class Rows:
    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    def put(self, slot: str, record: str) -> None:
        self.rows[slot] = record

    def forget(self, slot: str) -> None:
        self.rows.pop(slot, None)

    def all(self) -> list[tuple[str, str]]:
        return sorted(self.rows.items())


def test_a_process_in_uninterruptible_sleep_breaks_the_slot_until_it_ends(
        work: Path, stuck_device: str) -> None:  # noqa: F811
    # the job leaves a reader stuck in D and exits once it is
    script = work / "stuck.sh"
    script.write_text(f"dd if={stuck_device} of=/dev/null iflag=direct bs=4096 count=1 "
                      "2>/dev/null &\np=$!\ni=0\nwhile [ $i -lt 600 ]; do\n"
                      "  set -- $(cat /proc/$p/stat)\n"
                      "  [ \"$3\" = D ] && exit 0\n"
                      "  sleep 0.05; i=$((i+1))\ndone\nexit 3\n")
    script.chmod(0o755)
    job = {"Cmd": "/bin/sh", "Arguments": str(script), "ClusterId": 7, "ProcId": 0}
    s = settings(work)
    out = run(job, {"Name": "slot1_1@vm", "Cpus": 1}, s)
    assert out.attributes["ExitCode"] == 0, out.attributes     # the reader was in D
    reports = sorted((work / "execute").glob("starter_*.exit"))
    assert len(reports) == 1
    report = take_report(str(reports[0]))
    assert report is not None
    assert report.code is StarterExit.IMMORTAL_JOB_PROCESS and report.job_id == "7.0"
    assert [x.state for x in report.leftovers] == ["D"]
    assert report.cgroup is not None and os.path.isdir(report.cgroup)
    pid = report.leftovers[0].pid

    # the startd's side, on the same report: the slot breaks (the knob is on)...
    sock = str(reports[0])[:-len(".exit")] + ".sock"
    Path(report_path(sock)).write_text(report.to_json())
    slots, rows = Slots(), Rows()
    keeper = BrokenKeeper(slots, rows, BreakRules(leftover_procs=True))  # type: ignore[arg-type]
    keeper.starter_gone("claim-1", sock)
    item = slots.ledger.get("slot1_1")
    assert item is not None and item.cause.code is BrokenCode.HUNG_PROCESSES
    assert item.context["JobId"] == "7.0" and list(rows.rows) == ["slot1_1"]
    keeper.check()
    assert slots.mended == []                           # still in D: still broken

    # ...and mends once the device is back: the read ends, the kill takes effect
    _sh(_tool("dmsetup"), "--noudevsync", "--noudevrules", "resume", NAME)
    deadline = time.monotonic() + 60
    while _state(pid) not in (None, "Z", "X"):
        assert time.monotonic() < deadline, "the reader never ended"
        time.sleep(0.05)
    keeper.check()
    assert slots.mended == ["slot1_1"] and rows.rows == {}
    assert not os.path.isdir(report.cgroup)             # the startd removed it
