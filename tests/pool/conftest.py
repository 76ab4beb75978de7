"""The reference pool fixture for tests marked ``pool``.

Each pool (one per Debian release: trixie's HTCondor 23.9.6, forky's 25.14.1) is built
once (cached under tests/pool/.cache) and started at most once per test session, at the
first module that asks for it; each listens on its own free port, so both can be up at
once. Where a pool cannot be built or run (not root, no Debian mirror) its tests are
skipped with the reason; ``CONDORPY_REQUIRE_POOL=1`` (CI) makes that a failure.

The pool lane runs under pytest-xdist (``-n N --dist loadfile``, as bin/test does):
each worker starts its own pools, in overlays of the built chroot (refpool.py), so tests
on different workers never see each other's jobs, slots or restarts. A module's tests
stay together on one worker, since module fixtures restart the pool with other settings
(tokens, shared port) or share one daemon; a module whose set-up is all per test says
``POOL_TESTS_APART = True`` and its tests spread over the workers.

Which pool a module gets: its ``REFPOOL_RELEASE`` (e.g. ``REFPOOL_RELEASE = "forky"``,
as the modules in tests/pool/v25/ say), else ``CONDORPY_REFPOOL_RELEASE`` from the
environment (``CONDORPY_REFPOOL_RELEASE=forky`` runs the whole pool lane against
25.14.1), else trixie.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import shutil
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pool.refpool import SUITE, PoolUnavailable, RefPool


@pytest.fixture(scope="session")
def refpools() -> Iterator[Callable[[str], RefPool]]:
    """The session's pools by release, each started at its first use."""
    started: dict[str, RefPool] = {}
    failed: dict[str, str] = {}

    def get(release: str) -> RefPool:
        if release in failed:
            unavailable(failed[release])
        if release not in started:
            try:
                pool = RefPool(release=release)
                pool.start()
            except PoolUnavailable as exc:
                failed[release] = f"reference pool ({release}) unavailable: {exc}"
                unavailable(failed[release])
            started[release] = pool
        return started[release]

    try:
        yield get
    finally:
        for pool in started.values():
            pool.close()


def unavailable(reason: str) -> None:
    if os.environ.get("CONDORPY_REQUIRE_POOL") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def refpool(request: pytest.FixtureRequest,
            refpools: Callable[[str], RefPool]) -> RefPool:
    release = (getattr(request.module, "REFPOOL_RELEASE", None)
               or os.environ.get("CONDORPY_REFPOOL_RELEASE") or SUITE)
    return refpools(str(release))


@pytest.fixture
def jobdir(refpool: RefPool, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A directory of the test's own that the pool and condorpy see at one path (the
    shared directory), writable by alice and the jobs' users; the test's jobs are
    removed from the pool's queue after it."""
    d = refpool.shared / re.sub(r"\W", "_", request.node.name)
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    d.chmod(0o1777)
    yield d
    refpool.condor("condor_rm", "-all", check=False)


@pytest.fixture
def submitdir(refpool: RefPool, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A directory inside the pool's chroot only (not the shared one): condorpy's jobs
    cannot reach it by its path, so their files must be transferred."""
    inside = Path("/home/alice") / re.sub(r"\W", "_", request.node.name)
    d = refpool.root / str(inside).lstrip("/")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    yield d
    refpool.condor("condor_rm", "-all", check=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    # A pool test that fails attaches what the pool's daemons said meanwhile: the pool
    # lives in a chroot that CI throws away, and a failure there cannot be rerun.
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    funcargs = getattr(item, "funcargs", {})
    pools = {id(p): p for p in funcargs.values() if isinstance(p, RefPool)}
    for pool in pools.values():
        text, pool.last_diagnosis = pool.last_diagnosis, None
        try:
            text = text or pool.diagnose(call.start - 5)
        except Exception as exc:       # a diagnosis must never hide the failure
            text = f"no diagnosis: {exc}"
        report.sections.append((f"reference pool ({pool.release})", text))


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` for the pool lane: a module's tests go to one worker, unless
    the module says ``POOL_TESTS_APART = True``; then each of its tests is a unit of
    its own. (xdist's loadgroup would do it with markers, but it renames the tests'
    ids through a private attribute that pytest 9.2 no longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class PoolScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if _apart(path) else path

    # units go out in collection order, which puts the longest tests first (below)
    config.option.loadscopereorder = False
    return PoolScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A module that says POOL_LONG_MODULE = True (minutes on one worker) first of all,
    # then the tests of POOL_TESTS_APART modules (jobs through restarts: a minute or
    # more each), so that no worker starts one of them when the others are done.
    # Stable: each module's tests stay together and in order.
    items.sort(key=lambda item: (not _flag(item.nodeid.split("::", 1)[0], "POOL_LONG_MODULE"),
                                 not _apart(item.nodeid.split("::", 1)[0])))


def _apart(path: str) -> bool:
    return _flag(path, "POOL_TESTS_APART")


@functools.cache
def _flag(path: str, name: str) -> bool:
    if not path.endswith(".py"):
        return False
    try:
        module = importlib.import_module(path[:-3].replace("/", "."))
    except ImportError:
        return False
    return bool(getattr(module, name, False))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # bin/test runs a pool test that failed once more, alone, on fresh pools: it names
    # the file (CONDORPY_FAILED_TESTS) that collects them
    failed_file = os.environ.get("CONDORPY_FAILED_TESTS")
    if failed_file and report.failed:
        with open(failed_file, "a") as f:
            f.write(report.nodeid + "\n")
