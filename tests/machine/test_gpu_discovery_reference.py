"""condorpy's simulated GPUs against the output of HTCondor's own condor_gpu_discovery,
recorded from the real binaries (see tests/machine/gpu_reference.py; the pool lane's
tests/pool/test_gpu_discovery_live.py runs the binaries themselves)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from condorpy.machine import gpus
from tests.machine.fakehost import roots
from tests.machine.gpu_reference import REFERENCE, expected, only_version_differences


def _ours(args: str) -> str:
    return gpus.discover(shlex.split(args), roots(Path("/nonexistent")))


@pytest.mark.parametrize("args", sorted(REFERENCE))
def test_output_is_condor_gpu_discovery_s_line_for_line(args: str) -> None:
    assert _ours(args) == expected(args)


@pytest.mark.parametrize("args", sorted(a for a in REFERENCE if "25.14.1" in REFERENCE[a]))
def test_23_9_differs_only_by_its_two_known_faults(args: str) -> None:
    assert only_version_differences(REFERENCE[args]["23.9.6"], _ours(args), args) == []


def test_the_issue_s_v100_and_two_a100s() -> None:
    """-simulate:2,1,4,2: one V100 (7.0) and two A100s (8.0), the devices the GPU
    matching tests use."""
    out = _ours("-simulate:2,1,4,2 -extra")
    assert out.splitlines()[0] == 'DetectedGPUs="GPU-a0223334, GPU-b1223334, GPU-c2223334"'
    assert "GPU_a0223334=[ id=\"GPU-a0223334\"; Capability=7.0;" in out
    assert out.count("Capability=8.0;") == 2
