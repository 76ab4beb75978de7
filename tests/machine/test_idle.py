import os
from pathlib import Path

from condorpy.machine.idle import IdleTimes, measure_idle, slot_idle
from condorpy.machine.roots import HostRoots
from tests.machine.fakehost import NOW, roots, touch, utmp_record, write


def _utmp(tmp: Path, *records: bytes) -> None:
    (tmp / "run").mkdir(parents=True, exist_ok=True)
    (tmp / "run/utmp").write_bytes(b"".join(records))


def test_keyboard_idle_from_utmp_ttys_only(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    touch(dev / "pts/0", NOW - 30)       # alice's session
    touch(dev / "pts/1", NOW - 5)        # not logged in according to utmp: ignored
    touch(dev / "tty1", NOW - 4000)      # a dead-process record: ignored
    _utmp(tmp_path, utmp_record(7, "pts/0"), utmp_record(8, "tty1"))
    idle = measure_idle(roots(tmp_path), console_devices=[])
    assert idle == IdleTimes(30, None)


def test_bad_utmp_scans_every_tty_and_pts(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    touch(dev / "pts/0", NOW - 30)
    touch(dev / "pts/1", NOW - 5)
    touch(dev / "tty1", NOW - 4000)
    touch(dev / "sda", NOW - 1)          # not a terminal
    idle = measure_idle(roots(tmp_path), console_devices=[], bad_utmp=True)
    assert idle.keyboard_idle == 5


def test_console_devices_and_input_devices(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    touch(dev / "console", NOW - 600)
    touch(dev / "input/event3", NOW - 90)
    touch(dev / "input/mice", NOW - 400)
    touch(dev / "input/by-id", NOW - 1)  # not an event or mouse device
    touch(dev / "pts/0", NOW - 20)
    _utmp(tmp_path, utmp_record(7, "pts/0"))
    idle = measure_idle(roots(tmp_path), console_devices=["mouse", "/dev/console"])
    # ConsoleIdle is the console devices' minimum; KeyboardIdle includes the ttys too
    assert idle == IdleTimes(20, 90)
    assert measure_idle(roots(tmp_path), console_devices=["console"],
                        include_input=False).console_idle == 600


def test_missing_everything_is_idle_since_the_epoch(tmp_path: Path) -> None:
    # no utmp, no /dev/input, CONSOLE_DEVICES naming absent devices
    idle = measure_idle(roots(tmp_path), console_devices=["mouse", "console"])
    assert idle == IdleTimes(int(NOW), int(NOW))


def test_atime_in_the_future_counts_as_now(tmp_path: Path) -> None:
    touch(tmp_path / "dev/console", NOW + 100)
    assert measure_idle(roots(tmp_path), console_devices=["console"]).console_idle == 0


def test_devices_sharing_dev_null_major_never_count() -> None:
    # the real /dev: /dev/zero shares /dev/null's major number, so its atime is ignored
    now = 2_000_000_000.0
    r = HostRoots(clock=lambda: now, utmp=())
    idle = measure_idle(r, console_devices=["zero"], include_input=False)
    assert idle.console_idle == int(now)


def test_unreadable_directory_of_input_devices_is_skipped(tmp_path: Path) -> None:
    write(tmp_path / "dev/input", "not a directory")
    touch(tmp_path / "dev/console", NOW - 7)
    assert measure_idle(roots(tmp_path), console_devices=["console"]).console_idle == 7


def test_disconnected_slot_reports_time_since_start_plus_boost() -> None:
    real = IdleTimes(3, 3)
    assert slot_idle(real, True, NOW - 100, NOW, 1200) == real
    assert slot_idle(real, False, NOW - 100, NOW, 1200) == IdleTimes(1300, 1300)
    assert os.path.exists("/dev/null")
