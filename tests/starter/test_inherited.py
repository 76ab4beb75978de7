"""A job does not inherit the service's raised open-files limit or its negative OOM
score adjustment."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.starter.inherited import nofile_for_job, oom_adj_for_job

INF = resource.RLIM_INFINITY


def test_nofile_for_job() -> None:
    assert nofile_for_job(131072, 131072) == (1024, 131072)
    assert nofile_for_job(1024, 524288) == (1024, 524288)
    assert nofile_for_job(INF, INF) == (1024, 524288)
    assert nofile_for_job(2048, 1048576) == (1024, 524288)
    assert nofile_for_job(256, 512) == (256, 512)          # never raised


def test_oom_adj_for_job() -> None:
    assert oom_adj_for_job(-500) == 0
    assert oom_adj_for_job(-1000) == 0
    assert oom_adj_for_job(0) is None
    assert oom_adj_for_job(300) is None                     # jobs first: kept


@pytest.fixture
def work() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="condorpy-inherit-"))
    os.chmod(d, 0o755)
    (d / "execute").mkdir(mode=0o755)
    (d / "out").mkdir()
    os.chmod(d / "out", 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _can_lower_oom_score_adj() -> bool:
    """Lowering needs CAP_SYS_RESOURCE, which a container's root may lack."""
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:
        try:
            with open("/proc/self/oom_score_adj", "w") as fh:
                fh.write("-500")
            os._exit(0)
        except OSError:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def test_a_job_of_a_service_with_raised_limits_gets_the_defaults(work: Path) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != INF and hard <= 1024:
        pytest.skip(f"the open-files hard limit here is {hard}: nothing to raise")
    lower_oom = _can_lower_oom_score_adj()
    out = work / "out" / "limits"
    (work / "job.ad").write_text(
        'ClusterId = 1\nProcId = 0\nOwner = "nobody"\nCmd = "/bin/sh"\n'
        'Arguments = "-c \'echo $(ulimit -Sn) $(ulimit -Hn) '
        '$(cat /proc/self/oom_score_adj)\'"\n'
        f'Out = "{out}"\n')
    (work / "slot.ad").write_text('Name = "slot1@t"\nCpus = 1\nMemory = 64\n')

    def as_a_service() -> None:
        # The service's LimitNOFILE: soft raised to the hard limit.
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        if lower_oom:
            with open("/proc/self/oom_score_adj", "w") as fh:
                fh.write("-500")

    res = subprocess.run([sys.executable, "-m", "condorpy", "starter", "--job-ad",
                          str(work / "job.ad"), "--slot-ad", str(work / "slot.ad"),
                          "--execute", str(work / "execute"), "--result",
                          str(work / "result.ad")], preexec_fn=as_a_service,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    want_hard = 524288 if hard == INF else min(hard, 524288)
    soft_got, hard_got, oom = out.read_text().split()
    assert (int(soft_got), hard_got) == (1024, str(want_hard))
    assert oom == "0"
