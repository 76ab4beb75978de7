"""Through a real daemon: a plain ``q`` shows the caller's jobs only, as condor_q does
since 8.5 (root's view too: condor_q run by root showed none of alice's jobs, and a
"Total for" line of its own), ``-allusers``, an owner or a job id shows everyone's."""

from __future__ import annotations

import contextlib
import io
import os
import pwd
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from condorpy.cli.main import main
from condorpy.cli.queue_cmds import user_name
from condorpy.queue.submit import parse_submit
from condorpy.startd.client import call
from tests.startd.daemon_helpers import Daemon, running, submit, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="submits as another user")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path)) as d:
        yield d


def _as(uid: int, d: Daemon, fn: Callable[[], object]) -> str:
    """``fn`` in a child process of user ``uid``, with this daemon's configuration; what
    it printed (the interpreter this test runs on may not be one another user can
    start, nor read the standard library of: the modules are the parent's)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            out = io.StringIO()
            try:
                os.setgid(uid)
                os.setuid(uid)
                # $USER still says root, as after su without a login: q goes by the uid
                os.environ["CONDOR_CONFIG"] = str(d.config)
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    fn()
            except BaseException as exc:   # the parent's assertion shows it
                out.write(f"failed: {exc!r}")
            os.write(w, out.getvalue().encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return data.decode()


def _q(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["q", *argv])
    return out.getvalue()


def test_plain_q_shows_my_jobs_and_allusers_everyones(daemon: Daemon,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    nobody = pwd.getpwnam("nobody").pw_uid
    work = tmp_path / "work"
    work.mkdir()
    # the other user reaches the daemon's socket
    for d in (tmp_path, *tmp_path.parents):
        if d == Path("/tmp"):
            break
        d.chmod(d.stat().st_mode | stat.S_IXOTH)
    job = "executable = /bin/true\nhold = true\nqueue\n"
    submit(daemon, job, work)
    # nobody's job: the daemon takes its Owner from the submitting process (parsed
    # here once first, so that the child finds every module loaded)
    parse_submit(job, "other.sub", cluster_id=1, owner="nobody", submit_dir=str(work),
                 qdate=1, env={})

    def nobody_submits() -> None:
        cluster = int(call(daemon.socket, "new_cluster", {}))
        ads = parse_submit(job, "other.sub", cluster_id=cluster, owner="nobody",
                           submit_dir=str(work), qdate=1, env={})
        print(call(daemon.socket, "submit", {"cluster": cluster,
                                             "ads": [a.to_old() for a in ads]}))

    sent = _as(nobody, daemon, nobody_submits)
    assert "'count': 1" in sent, sent
    cluster = 2
    wait_for(lambda: len(daemon.call("q")["ads"]) == 2, 30, daemon.output)
    me = user_name()
    monkeypatch.setenv("CONDOR_CONFIG", str(daemon.config))

    def owners(*argv: str) -> list[str]:
        return sorted(_q(*argv, "-af", "Owner").split())

    assert owners() == [me]
    assert _as(nobody, daemon, lambda: main(["q", "-af", "Owner"])) == "nobody\n"
    assert owners("-allusers") == sorted([me, "nobody"])
    assert owners("nobody") == ["nobody"]
    assert owners(str(cluster)) == ["nobody"]
    totals = _q("-totals").splitlines()
    assert totals[3].startswith("Total for query: 1 jobs;")
    assert totals[4].startswith(f"Total for {me}: 1 jobs;")
    assert totals[5].startswith("Total for all users: 2 jobs;")
    assert not any(line.startswith(f"Total for {me}")
                   for line in _q("-allusers").splitlines())
