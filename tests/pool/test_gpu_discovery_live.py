"""condorpy's simulated GPUs against HTCondor's own condor_gpu_discovery, run live in
the reference pool's chroots: 23.9.6 (trixie) and, when built, 25.14.1 (forky).

The recording the host lane compares with (tests/machine/gpu_reference.py) must still be
what the binaries print, and condorpy must print it: line for line what 25.14.1 prints,
and, against 23.9.6, no device attribute different but the two 23.9 faults named there.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.machine import gpus
from condorpy.machine.roots import HostRoots
from tests.machine.gpu_reference import REFERENCE, differences, only_version_differences
from tests.pool.refpool import PoolUnavailable, RefPool

pytestmark = pytest.mark.pool

BINARY = "/usr/libexec/condor/condor_gpu_discovery"


def _chroot(release: str) -> Path | None:
    # the binary only reads the chroot as built: no overlay, no running pool
    pool = RefPool(release=release, instance="gpu-discovery")
    if os.geteuid() != 0:
        pytest.skip("condor_gpu_discovery runs in the reference pool's chroot: needs root")
    if not pool.built():
        if release != "trixie":
            return None    # the forky chroot is built only by the tests that need it
        try:
            pool.build()
        except PoolUnavailable as exc:
            if os.environ.get("CONDORPY_REQUIRE_POOL") == "1":
                pytest.fail(f"reference pool unavailable: {exc}")
            pytest.skip(f"reference pool unavailable: {exc}")
        finally:
            pool.close()
    return pool.base


@pytest.fixture(scope="module")
def chroots() -> Iterator[dict[str, Path | None]]:
    yield {"23.9.6": _chroot("trixie"), "25.14.1": _chroot("forky")}


def _theirs(root: Path, args: str) -> str:
    res = subprocess.run(["chroot", str(root), BINARY, *shlex.split(args)],
                         capture_output=True, text=True, timeout=60, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    assert res.returncode == 0, res.stderr
    return res.stdout


def _ours(args: str) -> str:
    return gpus.discover(shlex.split(args), HostRoots(env={}, use_nvml=False))


@pytest.mark.parametrize("args", sorted(REFERENCE))
def test_simulated_gpus_agree_with_condor_gpu_discovery(chroots: dict[str, Path | None],
                                                        args: str) -> None:
    old = chroots["23.9.6"]
    assert old is not None
    theirs = _theirs(old, args)
    assert theirs == REFERENCE[args]["23.9.6"], "the recording is out of date"
    ours = _ours(args)
    if "25.14.1" not in REFERENCE[args]:
        assert ours == theirs
        assert differences(theirs, ours) == []
    else:
        assert only_version_differences(theirs, ours, args) == []
    new = chroots["25.14.1"]
    if new is not None:
        assert ours == _theirs(new, args)
