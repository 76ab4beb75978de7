"""The PSI reader: /proc/pressure and a cgroup's *.pressure behind the roots, absent
files (a kernel without PSI) giving no readings rather than errors."""

from pathlib import Path

from condorpy.machine import measure_activity
from condorpy.machine.pressure import (JOB_PREFIX, MACHINE_PREFIX, Pressure, PressureLine,
                                       attribute_names, from_wire, parse_pressure,
                                       read_cgroup_pressure, read_machine_pressure,
                                       to_wire)
from tests.machine.fakehost import knobs, roots, write

MEMORY = ("some avg10=23.50 avg60=10.00 avg300=2.25 total=4500000\n"
          "full avg10=5.00 avg60=1.00 avg300=0.10 total=900000\n")
CPU = "some avg10=1.00 avg60=0.50 avg300=0.25 total=123\n"   # kernels before 5.13: no full


def test_parses_both_lines_and_skips_malformed_ones() -> None:
    got = parse_pressure(MEMORY + "full avg10=x avg60=1 avg300=1 total=1\nweird\n")
    assert got["some"] == PressureLine(23.5, 10.0, 2.25, 4500000)
    assert got["full"] == PressureLine(5.0, 1.0, 0.1, 900000)     # first good line kept
    assert parse_pressure("some avg10=1.0 total=5\n") == {}        # fields missing


def test_machine_pressure_as_slot_ad_attributes(tmp_path: Path) -> None:
    write(tmp_path / "proc/pressure/memory", MEMORY)
    write(tmp_path / "proc/pressure/cpu", CPU)
    p = read_machine_pressure(roots(tmp_path))
    attrs = p.attributes(MACHINE_PREFIX)
    assert attrs["MachinePressureMemorySomeAvg10"] == 23.5
    assert attrs["MachinePressureMemoryFullAvg300"] == 0.1
    assert attrs["MachinePressureMemorySomeTotal"] == 4500000
    assert attrs["MachinePressureCpuSomeAvg60"] == 0.5
    # no io file, no cpu full line: those attributes are left out (undefined in the ad)
    assert "MachinePressureIoSomeAvg10" not in attrs
    assert "MachinePressureCpuFullAvg10" not in attrs
    assert set(attrs) <= set(attribute_names(MACHINE_PREFIX))
    assert len(attribute_names(MACHINE_PREFIX)) == 24


def test_kernel_without_psi_gives_nothing(tmp_path: Path) -> None:
    assert read_machine_pressure(roots(tmp_path)) == Pressure()
    assert read_cgroup_pressure(tmp_path / "gone") == Pressure()
    a = measure_activity(knobs({"CONSOLE_DEVICES": ""}), roots(tmp_path))
    assert a.pressure == Pressure()


def test_activity_reads_pressure_with_the_load(tmp_path: Path) -> None:
    write(tmp_path / "proc/loadavg", "0.50 0.40 0.30 1/100 42\n")
    write(tmp_path / "proc/pressure/io", MEMORY)
    a = measure_activity(knobs({"CONSOLE_DEVICES": ""}), roots(tmp_path))
    assert a.pressure.get("io", "full") == PressureLine(5.0, 1.0, 0.1, 900000)


def test_cgroup_pressure_and_its_wire_form(tmp_path: Path) -> None:
    write(tmp_path / "job.slice/memory.pressure", MEMORY)
    write(tmp_path / "job.slice/cpu.pressure", CPU)
    p = read_cgroup_pressure(tmp_path / "job.slice")
    assert p.attributes(JOB_PREFIX)["JobPressureMemoryFullAvg10"] == 5.0
    assert from_wire(to_wire(p)) == p
    # a report from a confused starter loses only what is malformed
    assert from_wire([["memory", "some", 1, 2, 3, 4], ["disk", "some", 1, 2, 3, 4],
                      ["cpu", "some", True, 2, 3, 4], "x"]) == \
        Pressure((("memory", "some", PressureLine(1.0, 2.0, 3.0, 4)),))
    assert from_wire(None) == Pressure()


def test_a_file_that_fails_to_read_is_absent(tmp_path: Path) -> None:
    """As /proc/pressure/* on a kernel booted psi=0 (the read fails): no reading."""
    (tmp_path / "proc/pressure/memory").mkdir(parents=True)     # read() fails: EISDIR
    write(tmp_path / "proc/pressure/io", MEMORY)
    p = read_machine_pressure(roots(tmp_path))
    assert [r for r, _k, _l in p.lines] == ["io", "io"]
