"""`condorpy starter` end to end: ads in, final job ad out."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.cli.starter_cmd import main
from condorpy.errors import ConfigError, StarterError


@pytest.fixture
def work() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="condorpy-cli-"))
    os.chmod(d, 0o755)
    (d / "execute").mkdir()
    os.chmod(d / "execute", 0o755)
    (d / "out").mkdir()
    os.chmod(d / "out", 0o777)
    (d / "slot.ad").write_text('Name = "slot2@cli"\nCpus = 2\nMemory = 256\n')
    yield d
    shutil.rmtree(d, ignore_errors=True)


def write_job(work: Path, body: str) -> Path:
    path = work / "job.ad"
    path.write_text('ClusterId = 12\nProcId = 0\nOwner = "nobody"\n' + body)
    return path


def test_final_ad_has_exit_and_usage(work: Path) -> None:
    out = work / "out" / "o"
    job = write_job(work, f'Cmd = "/bin/sh"\nArguments = "-c \'echo $OMP_NUM_THREADS; '
                          f'exit 5\'"\nOut = "{out}"\nNOTIFY = RequestCpus * 2\n')
    result = work / "result.ad"
    rc = main(["--job-ad", str(job), "--slot-ad", str(work / "slot.ad"),
               "--execute", str(work / "execute"), "--result", str(result)])
    assert rc == 0
    ad = ClassAd.parse_old(result.read_text())
    assert ad["ExitCode"] == 5 and ad["ExitBySignal"] is False
    for name in ("JobDuration", "RemoteUserCpu", "RemoteSysCpu", "MemoryUsage",
                 "ResidentSetSize", "ImageSize", "DiskUsage", "NumPids"):
        assert name in ad, name
    assert ad.lookup("NOTIFY") is not None          # the job's own expressions survive
    assert out.read_text() == "2\n"
    assert list((work / "execute").iterdir()) == []


def test_hold_goes_into_the_ad_and_exit_status(work: Path) -> None:
    job = write_job(work, 'Cmd = "/no/such/program"\n')
    result = work / "result.ad"
    rc = main(["--job-ad", str(job), "--slot-ad", str(work / "slot.ad"),
               "--execute", str(work / "execute"), "--result", str(result)])
    assert rc == 3
    ad = ClassAd.parse_old(result.read_text())
    assert ad["HoldReasonCode"] == 6 and ad["HoldReasonSubCode"] == 2
    assert "/no/such/program" in ad["HoldReason"]


def test_bad_knob_and_missing_files_are_user_errors(work: Path) -> None:
    job = write_job(work, 'Cmd = "/bin/true"\n')
    with pytest.raises(ConfigError, match="CGROUP_MEMORY_LIMIT_POLICY"):
        main(["--job-ad", str(job), "--slot-ad", str(work / "slot.ad"), "--execute",
              str(work / "execute"), "--set", "CGROUP_MEMORY_LIMIT_POLICY=bogus"])
    with pytest.raises(StarterError, match="cannot read the job ad"):
        main(["--job-ad", str(work / "nope"), "--slot-ad", str(work / "slot.ad"),
              "--execute", str(work / "execute")])
    with pytest.raises(StarterError, match="execute directory"):
        main(["--job-ad", str(job), "--slot-ad", str(work / "slot.ad"),
              "--execute", str(work / "missing")])


def test_sigterm_to_the_starter_is_a_soft_kill(work: Path) -> None:
    ready = work / "out" / "ready"
    job = write_job(work, f'Cmd = "/bin/sh"\nArguments = "-c \'trap \\"exit 7\\" TERM; '
                          f'touch {ready}; while :; do sleep 0.05; done\'"\n')
    result = work / "result.ad"
    proc = subprocess.Popen(
        [sys.executable, "-m", "condorpy", "starter", "--job-ad", str(job),
         "--slot-ad", str(work / "slot.ad"), "--execute", str(work / "execute"),
         "--result", str(result)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 4, err
    assert "Traceback" not in err
    assert ClassAd.parse_old(result.read_text())["ExitCode"] == 7


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch users")
def test_knobs_from_a_config_file(work: Path) -> None:
    import pwd
    try:
        pwd.getpwnam("daemon")
    except KeyError:
        pytest.skip("no 'daemon' account")
    config = work / "condor_config"
    config.write_text("STARTER_ALLOW_RUNAS_OWNER = False\nSLOT2_USER = daemon\n")
    out = work / "out" / "who"
    job = write_job(work, f'Cmd = "/bin/sh"\nArguments = "-c \'id -un > {out}\'"\n')
    (work / "slot.ad").write_text('Name = "slot2@cli"\nSlotID = 2\nCpus = 1\n')
    rc = main(["--job-ad", str(job), "--slot-ad", str(work / "slot.ad"), "--execute",
               str(work / "execute"), "--config", str(config),
               "--result", str(work / "r.ad")])
    assert rc == 0
    assert out.read_text() == "daemon\n"
