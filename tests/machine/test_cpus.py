from pathlib import Path

from condorpy.machine.cpus import count_cpus, parse_cpu_list
from tests.machine.fakehost import cpuinfo, roots, topology, write


def test_cpu_list_ranges() -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("") == []


def test_hyperthreads_from_sys_topology(tmp_path: Path) -> None:
    # two packages, two cores each, two threads per core
    cpus = [(i, i // 4, (i // 2) % 2) for i in range(8)]
    topology(tmp_path / "sys", cpus)
    c = count_cpus(roots(tmp_path))
    assert (c.logical, c.physical, c.packages) == (8, 4, 2)
    assert c.detected_cpus(True) == 8
    assert c.detected_cpus(False) == 4


def test_cpuinfo_when_topology_is_missing(tmp_path: Path) -> None:
    write(tmp_path / "sys/devices/system/cpu/online", "0-3\n")
    write(tmp_path / "proc/cpuinfo", cpuinfo([(0, 0, 0), (1, 0, 1), (2, 0, 0), (3, 0, 1)]))
    c = count_cpus(roots(tmp_path))
    assert (c.logical, c.physical) == (4, 2)
    assert (c.family, c.model_number, c.cache_kb) == (6, 85, 1024)


def test_no_core_ids_means_every_cpu_is_a_core(tmp_path: Path) -> None:
    write(tmp_path / "proc/cpuinfo", cpuinfo([(0, None, None), (1, None, None), (2, None, None)]))
    c = count_cpus(roots(tmp_path))
    assert (c.logical, c.physical) == (3, 3)


def test_nothing_readable_is_one_cpu(tmp_path: Path) -> None:
    c = count_cpus(roots(tmp_path))
    assert (c.logical, c.physical) == (1, 1)
