"""Where starters go, on a fake cgroup tree and a fake systemd (the real ones are in
the systemd lane: tests/startd/test_vm_service.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from condorpy.config import Config
from condorpy.errors import StartdError
from condorpy.startd.placement import Placement, place

CFG = Config.from_mapping({})
DAEMON, LAUNCHER, KEEPALIVE, STRANGER = 101, 102, 4242, 999


class FakeSystemd:
    def __init__(self, mount: Path, active: bool = False, fail: str | None = None) -> None:
        self.mount = mount
        self.active = active
        self.fail = fail
        self.started: list[str] = []

    def unit_cgroup(self, unit: str) -> str | None:
        return f"/system.slice/{unit}" if self.active else None

    def start_scope(self, unit: str) -> None:
        if self.fail:
            raise StartdError(self.fail)
        self.started.append(unit)
        scope = self.mount / "system.slice" / unit
        make_cgroup(scope, [KEEPALIVE])        # systemd-run's process, at the top
        self.active = True


def make_cgroup(path: Path, procs: list[int]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "cgroup.controllers").write_text("cpu memory pids\n")
    (path / "cgroup.procs").write_text("".join(f"{p}\n" for p in procs))


def procs(path: Path) -> list[int]:
    text = (path / "cgroup.procs").read_text()
    return [int(p) for p in text.split()] if text.strip() else []


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A cgroup v2 mount with the daemon's service, and a /proc naming it."""
    mount = tmp_path / "cgroup"
    make_cgroup(mount, [])
    make_cgroup(mount / "system.slice" / "condorpy.service", [DAEMON, LAUNCHER])
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text("0::/system.slice/condorpy.service\n")
    return mount, proc


class MovingFiles:
    """cgroup.procs as the kernel keeps it: writing a pid moves it."""

    def __init__(self, mount: Path) -> None:
        self.mount = mount

    def patch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import condorpy.startd.placement as placement
        real_move = placement.move

        def move(directory: str, pids: object) -> None:
            pids = list(pids)  # type: ignore[call-overload]
            for cg in self.mount.rglob("cgroup.procs"):
                left = [p for p in procs(cg.parent) if p not in pids]
                cg.write_text("".join(f"{p}\n" for p in left))
            real_move(directory, [])
            Path(directory, "cgroup.procs").write_text("".join(f"{p}\n" for p in pids))
        monkeypatch.setattr(placement, "move", move)


def test_under_systemd_a_scope_is_made_and_everyone_steps_aside(
        tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    mount, proc = tree
    MovingFiles(mount).patch(monkeypatch)
    api = FakeSystemd(mount)
    got = place(CFG, {}, [DAEMON, LAUNCHER], mount=str(mount), proc_root=str(proc),
                api=api, systemd=True, root=True)
    scope = mount / "system.slice" / "condorpy-jobs.scope"
    assert api.started == ["condorpy-jobs.scope"]
    assert got == Placement(str(scope / "starters.leaf"),
                            f"condorpy-jobs.scope ({scope})", "condorpy-jobs.scope")
    assert procs(scope) == [] and procs(scope / "init.leaf") == [KEEPALIVE]
    service = mount / "system.slice" / "condorpy.service"
    assert procs(service) == [] and procs(service / "daemon.leaf") == [DAEMON, LAUNCHER]


def test_a_running_scope_is_used_as_it_is(tree: tuple[Path, Path],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    mount, proc = tree
    MovingFiles(mount).patch(monkeypatch)
    scope = mount / "system.slice" / "my-jobs.scope"
    make_cgroup(scope, [])
    make_cgroup(scope / "init.leaf", [KEEPALIVE])
    make_cgroup(scope / "job_7.slice", [])
    api = FakeSystemd(mount, active=True)
    cfg = Config.from_mapping({"CONDORPY_JOBS_SCOPE": "my-jobs"})
    got = place(cfg, {}, [DAEMON, LAUNCHER], mount=str(mount), proc_root=str(proc),
                api=api, systemd=True, root=True)
    assert api.started == [] and got.unit == "my-jobs.scope"
    assert got.starters == str(scope / "starters.leaf")
    assert (scope / "job_7.slice").is_dir()


def test_no_scope_means_the_services_own_leaves_with_a_warning(
        tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    mount, proc = tree
    MovingFiles(mount).patch(monkeypatch)
    api = FakeSystemd(mount, fail="systemd-run: Access denied")
    with caplog.at_level(logging.WARNING, "condorpy.startd"):
        got = place(CFG, {}, [DAEMON, LAUNCHER], mount=str(mount), proc_root=str(proc),
                    api=api, systemd=True, root=True)
    service = mount / "system.slice" / "condorpy.service"
    assert got.starters == str(service / "starters.leaf") and got.unit is None
    assert procs(service / "daemon.leaf") == [DAEMON, LAUNCHER]
    assert "Access denied" in caplog.text and "restarting the service ends them" in caplog.text


def test_without_systemd_in_a_delegated_cgroup(tree: tuple[Path, Path],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    mount, proc = tree
    MovingFiles(mount).patch(monkeypatch)
    got = place(CFG, {}, [DAEMON, LAUNCHER], mount=str(mount), proc_root=str(proc),
                systemd=False)
    service = mount / "system.slice" / "condorpy.service"
    assert got.starters == str(service / "starters.leaf")
    assert procs(service) == [] and procs(service / "daemon.leaf") == [DAEMON, LAUNCHER]


def test_other_processes_in_our_cgroup_mean_no_placement(
        tree: tuple[Path, Path], caplog: pytest.LogCaptureFixture) -> None:
    mount, proc = tree
    make_cgroup(mount / "system.slice" / "condorpy.service", [DAEMON, LAUNCHER, STRANGER])
    with caplog.at_level(logging.WARNING, "condorpy.startd"):
        got = place(CFG, {}, [DAEMON, LAUNCHER], mount=str(mount), proc_root=str(proc),
                    systemd=False)
    assert got.starters is None
    assert "holds other processes [999]" in caplog.text
    assert len(caplog.records) == 1


def test_the_root_cgroup_keeps_the_daemon(tree: tuple[Path, Path]) -> None:
    mount, proc = tree
    (proc / "self" / "cgroup").write_text("0::/\n")
    got = place(CFG, {}, [DAEMON, LAUNCHER], mount=str(mount), proc_root=str(proc),
                systemd=False)
    assert got.starters == str(mount / "condorpy.starters.leaf")


def test_no_cgroup_v2_is_one_warning(tmp_path: Path,
                                     caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "unified").mkdir()
    with caplog.at_level(logging.WARNING, "condorpy.startd"):
        got = place(CFG, {"INVOCATION_ID": "x"}, [DAEMON], mount=str(tmp_path),
                    proc_root=str(tmp_path))
    assert got.starters is None
    assert len(caplog.records) == 1 and "not a cgroup v2 hierarchy" in caplog.text
