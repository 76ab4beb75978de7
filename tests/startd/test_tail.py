"""`tail`: a running job's stdout/stderr read by the daemon for its owner or root, through
the job's own open descriptor (condorpy/startd/job_tail.py). A real child process of
this test stands in for the job, the test process for its starter."""

from __future__ import annotations

import base64
import os
import pwd
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import pytest

from condorpy.errors import CondorpyError
from condorpy.queue.jobstore import JobId
from condorpy.queue.submit import parse_submit
from condorpy.startd import control, job_tail
from tests.startd.rm_rig import Rig

NOBODY = pwd.getpwnam("nobody")


def _child(stdout: object, stderr: object = subprocess.DEVNULL,
           user: int | None = None) -> subprocess.Popen[bytes]:
    pre = (lambda: os.setuid(user)) if user is not None else None
    return subprocess.Popen(["sleep", "60"], stdout=stdout, stderr=stderr,
                            stdin=subprocess.DEVNULL, preexec_fn=pre)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    out: list[subprocess.Popen[bytes]] = []
    yield out
    for p in out:
        p.kill()
        p.wait()


def test_reads_the_last_bytes_then_follows_from_the_offset(
        tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    out = tmp_path / "out"
    out.write_bytes(b"0123456789")
    with open(out, "ab") as f:
        procs.append(p := _child(f))
    chunk = job_tail.tail(p.pid, os.getpid(), 1, None, 4)
    assert (chunk.data, chunk.start, chunk.offset, chunk.size) == (b"6789", 6, 10, 10)
    with open(out, "ab") as f:
        f.write(b"abc")
    more = job_tail.tail(p.pid, os.getpid(), 1, chunk.offset, 100)
    assert (more.data, more.offset) == (b"abc", 13)
    # truncated below the offset: read again from the start
    out.write_bytes(b"xy")
    assert job_tail.tail(p.pid, os.getpid(), 1, 13, 100).data == b"xy"


def test_stderr_is_descriptor_two(tmp_path: Path,
                                  procs: list[subprocess.Popen[bytes]]) -> None:
    (tmp_path / "err").write_bytes(b"oops\n")
    with open(tmp_path / "err", "ab") as err:
        procs.append(p := _child(subprocess.DEVNULL, err))
    assert job_tail.tail(p.pid, os.getpid(), 2, None, 1024).data == b"oops\n"
    with pytest.raises(job_tail.TailError, match="stdout is not a file"):
        job_tail.tail(p.pid, os.getpid(), 1, None, 1024)     # /dev/null


def test_a_pipe_is_refused_and_not_drained(procs: list[subprocess.Popen[bytes]]) -> None:
    procs.append(p := _child(subprocess.PIPE))
    with pytest.raises(job_tail.TailError, match="not a file"):
        job_tail.tail(p.pid, os.getpid(), 1, None, 1024)


def test_a_process_that_is_not_the_starters_child_is_not_the_job(
        tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    # a pid reused by another process: its parent is not the job's starter
    with open(tmp_path / "out", "ab") as f:
        procs.append(p := _child(f))
    with pytest.raises(job_tail.TailError, match="ended"):
        job_tail.tail(p.pid, os.getpid() + 100000, 1, None, 1024)
    with pytest.raises(job_tail.TailError, match="ended"):
        job_tail.tail(2 ** 22 + 7, os.getpid(), 1, None, 1024)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as nobody")
def test_a_file_not_the_jobs_users_own_is_refused(
        tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    # the job (as nobody) holds root's file open, e.g. one it may write but not read
    secret = tmp_path / "secret"
    secret.write_bytes(b"root's")
    secret.chmod(0o622)
    with open(secret, "ab") as f:
        procs.append(p := _child(f, user=NOBODY.pw_uid))
    with pytest.raises(job_tail.TailError, match="not a file of the job's user"):
        job_tail.tail(p.pid, os.getpid(), 1, None, 1024)


# --- the daemon's command ---------------------------------------------------------

def _running_job(rig: Rig, owner: str, out: Path,
                 procs: list[subprocess.Popen[bytes]]) -> str:
    cluster = rig.store.new_cluster_id()
    ads = parse_submit("executable = /bin/sleep\narguments = 60\nrequest_memory = 16\n"
                       "queue\n", "t.sub", cluster_id=cluster, owner=owner,
                       submit_dir="/tmp", qdate=int(rig.clock.time()))
    rig.store.submit(ads, cluster_id=cluster)
    rig.schedd.submitted(rig.store.jobs(f"ClusterId == {cluster}"))
    rig.step(1)
    job = f"{cluster}.0"
    h = rig.handle(job)
    with open(out, "ab") as f:
        procs.append(p := _child(f))
    # the test process is the job's starter, the child its job
    assert h.launched is not None
    h.launched = replace(h.launched, pid=os.getpid())
    h.job_pid = p.pid
    return job


def _peer(uid: int, gid: int) -> control.Peer:
    return control.Peer(os.getpid(), uid, gid)


def test_the_owner_and_root_read_it_others_do_not(
        tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    rig = Rig(tmp_path)
    out = tmp_path / "job.out"
    out.write_bytes(b"hello from the job\n")
    job = _running_job(rig, "nobody", out, procs)
    got = rig.commands.dispatch("tail", {"id": job}, _peer(NOBODY.pw_uid, NOBODY.pw_gid))
    assert base64.b64decode(got["data"]) == b"hello from the job\n"
    got = rig.commands.dispatch("tail", {"id": job.split(".")[0], "maxbytes": 5},
                                _peer(0, 0))
    assert base64.b64decode(got["data"]) == b" job\n"
    other = pwd.getpwnam("daemon")
    with pytest.raises(CondorpyError, match=f"{other.pw_name} is not authorized for "
                                            f"access to the starter for job {job}"):
        rig.commands.dispatch("tail", {"id": job}, _peer(other.pw_uid, other.pw_gid))


def test_no_such_job_and_a_job_that_is_not_running(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    with pytest.raises(CondorpyError, match=r"No such job: 3\.0"):
        rig.cli("tail", id="3.0")
    cluster = rig.store.new_cluster_id()
    ads = parse_submit("executable = /bin/true\nrequirements = false\nqueue\n", "t.sub",
                       cluster_id=cluster, owner="alice", submit_dir="/tmp",
                       qdate=int(rig.clock.time()))
    rig.store.submit(ads, cluster_id=cluster)
    rig.step(1)
    assert rig.rm.job(JobId(cluster, 0)) is None
    with pytest.raises(CondorpyError, match=rf"Job {cluster}\.0 is not running\."):
        rig.cli("tail", id=f"{cluster}.0")
    with pytest.raises(CondorpyError, match="Invalid Job ID"):
        rig.cli("tail", id="x.1")
