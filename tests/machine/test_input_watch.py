"""The owner's keystrokes through inotify (condorpy.machine.input_watch), on real ptys:
a read of the terminal (the shell taking a keystroke) is the owner's; a write (a job's
output) is not; a new device or login makes the set be listed again."""

import os
import struct
import tty
from pathlib import Path
from typing import Iterator

import pytest

from condorpy.machine.idle import OwnerDevices
from condorpy.machine.input_watch import (IN_ACCESS, IN_CREATE, InputWatch, OwnerWatch,
                                          parse_events)
from condorpy.machine.roots import HostRoots


def test_parse_events_reads_each_record_and_skips_names() -> None:
    one = struct.pack("iIII", 3, IN_ACCESS, 0, 0)
    named = struct.pack("iIII", 4, IN_CREATE, 0, 16) + b"pts9".ljust(16, b"\0")
    assert parse_events(one + named + one) == [(3, IN_ACCESS), (4, IN_CREATE), (3, IN_ACCESS)]
    assert parse_events(named[:20]) == []          # torn: nothing made up
    assert parse_events(b"") == []


def _pty() -> tuple[int, int]:
    # raw, as a shell's line editor has it: each keystroke is read as it comes
    master, slave = os.openpty()
    tty.setraw(slave)
    return master, slave


@pytest.fixture
def watch() -> Iterator[InputWatch]:
    w = InputWatch.open()
    if w is None:
        pytest.skip("no inotify here")
    yield w
    w.close()


def test_a_keystroke_read_from_a_terminal_is_seen_and_output_is_not(watch: InputWatch) -> None:
    master, slave = _pty()
    try:
        watch.follow([Path(os.ttyname(slave))], [], [])
        assert watch.drain().keyboard is False
        os.write(slave, b"job output\n")           # written to the terminal: not the owner
        assert watch.drain().keyboard is False
        os.write(master, b"k")                     # the owner types, the shell reads it
        os.read(slave, 1)
        seen = watch.drain()
        assert seen.keyboard and not seen.console
    finally:
        os.close(master)
        os.close(slave)


def test_console_devices_count_for_console_and_keyboard(watch: InputWatch) -> None:
    master, slave = _pty()
    try:
        watch.follow([], [Path(os.ttyname(slave))], [])
        os.write(master, b"k")
        os.read(slave, 1)
        seen = watch.drain()
        assert seen.keyboard and seen.console
    finally:
        os.close(master)
        os.close(slave)


def test_the_set_is_listed_again_when_a_device_appears(tmp_path: Path,
                                                       watch: InputWatch) -> None:
    dev = tmp_path / "dev"
    (dev / "pts").mkdir(parents=True)
    master, slave = _pty()
    listed: list[int] = []
    names = [os.ttyname(slave)]

    def devices() -> OwnerDevices:
        listed.append(1)
        return OwnerDevices(tuple(names), ())

    owner = OwnerWatch(watch, devices, HostRoots(dev=Path("/"), utmp=()))
    try:
        owner.refresh()
        assert len(listed) == 1
        watch.follow([Path(n) for n in names], [], [dev / "pts"])
        (dev / "pts" / "9").touch()                # a new pty: list the devices again
        seen = owner.drain()
        assert seen.changed and not seen.keyboard and len(listed) == 2
        # the refresh kept the terminal watched
        os.write(master, b"k")
        os.read(slave, 1)
        assert owner.drain().keyboard
    finally:
        os.close(master)
        os.close(slave)


def test_a_device_that_goes_away_is_dropped(tmp_path: Path, watch: InputWatch) -> None:
    dev = tmp_path / "event0"
    dev.write_text("")
    watch.follow([], [dev], [])
    dev.unlink()
    seen = watch.drain()
    assert seen.changed and dev not in watch.paths
