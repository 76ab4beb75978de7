"""qedit and tail across users, written as the attack: an ordinary user may neither read
another user's running job's output nor edit their jobs, and a job cannot make root
read a file its user may only write (real accounts from tests/attackers.py; root)."""

from __future__ import annotations

import os
from pathlib import Path

from condorpy.classad import ClassAd
from tests.attackers import User, attacker, open_base, victim  # noqa: F401
from tests.startd.daemon_helpers import Daemon, wait_for


def _running(d: Daemon, n: int) -> bool:
    return sum("JobPid" in a for a in d.call("who")["ads"]) >= n


def _foo(d: Daemon, job: str) -> object:
    for text in d.call("q")["ads"]:
        ad = ClassAd.parse_old(text)
        if f"{ad.evaluate('ClusterId')}.{ad.evaluate('ProcId')}" == job:
            return ad.evaluate("Foo")
    raise AssertionError(f"no job {job}")


def test_another_user_can_neither_tail_nor_edit(open_base: Path, attacker: User,
                                                victim: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    try:
        env = d.env()
        victim.write(victim.home / "job.sh", "#!/bin/sh\necho victim-secret\n"
                     "exec sleep 300\n", 0o755)
        victim.write(victim.home / "j.sub", "executable = job.sh\noutput = out\n"
                     "request_memory = 16\nqueue\n")
        assert victim.cli(["submit", "j.sub"], env=env, cwd=victim.home).rc == 0
        wait_for(lambda: _running(d, 1), 60, d.output)
        wait_for(lambda: (victim.home / "out").exists()
                 and (victim.home / "out").stat().st_size > 0, 30, d.output)

        res = attacker.cli(["tail", "1.0"], env=env, cwd=attacker.home)
        assert res.rc == 1 and "victim-secret" not in res.stdout
        assert f"{attacker.name} is not authorized for access to the starter for job " \
               f"1.0" in res.stderr
        res = victim.cli(["tail", "1.0"], env=env, cwd=victim.home)
        assert (res.rc, res.stdout) == (0, "victim-secret\n")

        for argv in (["1.0", "Foo", "1"], [victim.name, "Foo", "1"]):
            res = attacker.cli(["qedit", *argv], env=env, cwd=attacker.home)
            assert res.rc == 1 and "may not change attributes for jobs they do not own" \
                in res.stderr, res
        res = attacker.cli(["qedit", "-constraint", "true", "Foo", "1"], env=env,
                           cwd=attacker.home)
        assert res.rc == 1 and "no matching jobs found" in res.stderr
        from condorpy.classad import Undefined
        assert _foo(d, "1.0") is Undefined
        res = victim.cli(["qedit", "1", "Foo", "2"], env=env, cwd=victim.home)
        assert res.rc == 0 and _foo(d, "1.0") == 2
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_job_cannot_make_root_read_a_file_it_may_only_write(open_base: Path,
                                                               victim: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    secret = open_base / "roots-secret"
    secret.write_text("root-only\n")
    os.chmod(secret, 0o622)           # anyone may append, only root may read
    try:
        env = d.env()
        victim.write(victim.home / "job.sh", f"#!/bin/sh\nexec >>{secret}\n"
                     "exec sleep 300\n", 0o755)
        victim.write(victim.home / "j.sub", "executable = job.sh\noutput = out\n"
                     "request_memory = 16\nqueue\n")
        assert victim.cli(["submit", "j.sub"], env=env, cwd=victim.home).rc == 0
        wait_for(lambda: _running(d, 1), 60, d.output)
        res = victim.cli(["tail", "1.0"], env=env, cwd=victim.home)
        wait_for(lambda: "not a file of the job's user" in
                 victim.cli(["tail", "1.0"], env=env, cwd=victim.home).stderr, 30,
                 lambda: str(res))
        assert "root-only" not in victim.cli(["tail", "1.0"], env=env,
                                             cwd=victim.home).stdout
    finally:
        d.stop()
        d.kill_leftovers()
        secret.unlink()
