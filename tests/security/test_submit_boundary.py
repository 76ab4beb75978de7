"""Where job ads enter the daemon, and which jobs a user's command acts on (issue #30
case 1 and the queue items of case 6), attacked as an ordinary user through a real
root daemon."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import CondorpyError, QueueError
from condorpy.startd.client import call
from condorpy.queue.jobstore import JobStore
from tests.attackers import User, attacker, fingerprint, open_base, victim  # noqa: F401
from tests.startd.daemon_helpers import Daemon, wait_for
from tests.startd.test_hooks import Hooks

NEVER_MATCHES = "requirements = TARGET.Memory < 0\n"


def _raw(user: User, d: Daemon, command: str, args: dict[str, Any]) -> Any:
    """One control-socket request as ``user``: ("ok", result) or ("error", message)."""
    sock = d.socket

    def request() -> tuple[str, Any]:
        try:
            return "ok", call(sock, command, args)
        except CondorpyError as exc:
            return "error", str(exc)
    got = user.call(request)
    assert got.kind == "ok", got
    return got.value


def _job_ad(user: User, extra: str) -> str:
    return (f'MyType = "Job"\nJobUniverse = 5\nCmd = "/bin/cat"\nArgs = "secret"\n'
            f'Iwd = "{user.home}"\nOut = "{user.home}/stolen"\nErr = "/dev/null"\n'
            f'In = "/dev/null"\nRequestMemory = 16\nRequestCpus = 1\n{extra}\n')


def _tree(path: Path) -> dict[str, tuple[str, int, int, int]]:
    out = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            p = Path(root) / name
            out[str(p.relative_to(path))] = fingerprint(p)
    out["."] = fingerprint(path)
    return out


def _ads(d: Daemon) -> dict[str, str]:
    with d.db() as db:
        return {f"{c}.{p}": ad for c, p, ad in db.execute("SELECT cluster, proc, ad FROM jobs")}


def test_a_submit_naming_another_users_sandbox_is_refused(open_base: Path, attacker: User,
                                                          victim: User) -> None:
    """Case 1 as filed: the victim's job keeps a 0600 secret in its sandbox; the attacker
    points CondorpyPreparedScratch at it (and at /etc), by submit file and raw request."""
    d = Daemon(open_base / "d")
    d.start()
    try:
        victim.write(victim.home / "job.sh", '#!/bin/sh\ncd "$_CONDOR_SCRATCH_DIR"\n'
                     "umask 077\necho victim-secret > .s\nmv .s secret\nexec sleep 300\n",
                     mode=0o755)
        victim.write(victim.home / "v.sub", f"executable = {victim.home}/job.sh\n"
                     "request_memory = 16\nqueue\n")
        assert victim.cli(["submit", "v.sub"], env=d.env(), cwd=victim.home).rc == 0
        execute = d.state / "execute"
        wait_for(lambda: any(execute.glob("dir_*/secret")), 30, d.output)
        sandbox = next(execute.glob("dir_*/secret")).parent
        before = _tree(sandbox)
        assert before["secret"][1:3] == (0o600, victim.uid)
        logs_before = sorted(os.listdir(d.state / "log"))

        attacker.write(attacker.home / "a.sub", "executable = /bin/cat\narguments = secret\n"
                       f"output = stolen\n+CondorpyPreparedScratch = \"{sandbox}\"\nqueue\n")
        res = attacker.cli(["submit", "a.sub"], env=d.env(), cwd=attacker.home)
        assert res.rc == 1
        assert "a.sub" in res.stderr and "line 4" in res.stderr
        assert "CondorpyPreparedScratch" in res.stderr and "Traceback" not in res.stderr
        for value in (str(sandbox), "/etc"):
            for name in ("CondorpyPreparedScratch", "condorpypreparedscratch"):
                kind, msg = _raw(attacker, d, "submit",
                                 {"ads": [_job_ad(attacker, f'{name} = "{value}"')]})
                assert kind == "error"
                assert name in msg and "submitted job ad 0" in msg
                assert "nothing was submitted" in msg
        kind, msg = _raw(attacker, d, "submit", {"ads": [
            _job_ad(attacker, ""), _job_ad(attacker, 'StarterUserLog = "/etc/cron.d/x"')]})
        assert kind == "error" and "submitted job ad 1 sets StarterUserLog" in msg

        # nothing queued, nothing started, the victim's sandbox as it was
        assert list(_ads(d)) == ["1.0"]
        assert d.statuses() == {"1.0": 2}
        assert "NumJobStarts = 1" in _ads(d)["1.0"]
        assert _tree(sandbox) == before
        assert sorted(os.listdir(d.state / "log")) == logs_before
        assert not (attacker.home / "stolen").exists()
        assert d.call("ping")["pid"] > 0
        assert "CondorpyPreparedScratch" in d.output()       # the refusal is logged
    finally:
        d.stop()
        d.kill_leftovers()


def test_forged_owner_status_and_ids_do_not_stick(open_base: Path, attacker: User,
                                                  victim: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    try:
        victim.write(victim.home / "v.sub", "executable = /bin/true\n" + NEVER_MATCHES +
                     "queue\n")
        assert victim.cli(["submit", "v.sub"], env=d.env(), cwd=victim.home).rc == 0
        # the schedd's attributes from a raw request: Owner and User are the peer's,
        # ClusterId the queue's, counters its own; JobStatus 5 means on hold
        kind, got = _raw(attacker, d, "submit", {"ads": [_job_ad(attacker, (
            'Owner = "cpyvictim"\nUser = "cpyvictim@elsewhere"\nClusterId = 1\n'
            'JobStatus = 5\nNumJobStarts = 1000\nGlobalJobId = "x#1.0#1"'))]})
        assert kind == "ok" and got["cluster"] == 2
        ad = _ads(d)["2.0"]
        assert f'Owner = "{attacker.name}"' in ad and f'User = "{attacker.name}@' in ad
        assert "ClusterId = 2" in ad and "NumJobStarts = 0" in ad
        assert "GlobalJobId" not in ad and "HoldReasonCode = 15" in ad
        assert 'Owner = "cpyvictim"' in _ads(d)["1.0"]
        for forged in ("JobStatus = 2", "JobStatus = 4", "ProcId = -3"):
            kind, msg = _raw(attacker, d, "submit", {"ads": [_job_ad(attacker, forged)]})
            assert kind == "error" and forged.split()[0] in msg, msg
        kind, msg = _raw(attacker, d, "submit", {"ads": [_job_ad(attacker, "")],
                                                 "cluster": 1})
        assert kind == "error" and "cluster 1 already has jobs" in msg
        attacker.write(attacker.home / "a.sub", "executable = /bin/true\n+JobStatus = 2\n"
                       "queue\n")
        res = attacker.cli(["submit", "a.sub"], env=d.env(), cwd=attacker.home)
        assert res.rc == 1 and "a.sub" in res.stderr and "line 2" in res.stderr
        assert sorted(_ads(d)) == ["1.0", "2.0"]
        assert d.statuses() == {"1.0": 1, "2.0": 5}
    finally:
        d.stop()
        d.kill_leftovers()


def test_hold_true_submits_on_hold_until_released(open_base: Path, attacker: User) -> None:
    d = Daemon(open_base / "d", cpus=1)
    d.start()
    try:
        attacker.write(attacker.home / "h.sub", "executable = /bin/true\nhold = true\n"
                       "request_memory = 16\nlog = h.log\nqueue\n")
        attacker.write(attacker.home / "r.sub", "executable = /bin/true\n"
                       "request_memory = 16\nqueue\n")
        env = d.env()
        assert attacker.cli(["submit", "h.sub"], env=env, cwd=attacker.home).rc == 0
        assert attacker.cli(["submit", "r.sub"], env=env, cwd=attacker.home).rc == 0
        # the job behind it ran and ended; the held one never started
        wait_for(lambda: d.statuses().get("2.0") == 4, 60, d.output)
        assert d.statuses()["1.0"] == 5
        ad = _ads(d)["1.0"]
        assert "HoldReasonCode = 15" in ad and "NumJobStarts = 0" in ad
        shown = attacker.cli(["q", "-hold"], env=env, cwd=attacker.home)
        assert shown.rc == 0 and "submitted on hold at user's request" in shown.stdout
        assert "1.0" in shown.stdout
        res = attacker.cli(["release", "1"], env=env, cwd=attacker.home)
        assert res.rc == 0 and "1.0" in res.stdout
        wait_for(lambda: d.statuses().get("1.0") == 4, 60, d.output)
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_cluster_reserved_by_another_user_is_refused(open_base: Path, attacker: User,
                                                       victim: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    try:
        kind, cluster = _raw(victim, d, "new_cluster", {})
        assert kind == "ok"
        ad = _job_ad(attacker, 'Cmd = "/bin/true"\nRequirements = TARGET.Memory < 0')
        kind, msg = _raw(attacker, d, "submit", {"ads": [ad], "cluster": cluster})
        assert kind == "error" and f"cluster {cluster} is reserved for another user" in msg
        kind, msg = _raw(attacker, d, "submit", {"ads": [ad], "cluster": cluster + 50})
        assert kind == "error" and "was not reserved" in msg
        vad = _job_ad(victim, 'Cmd = "/bin/true"\nRequirements = TARGET.Memory < 0')
        kind, got = _raw(victim, d, "submit", {"ads": [vad], "cluster": cluster})
        assert kind == "ok" and got["cluster"] == cluster
        kind, msg = _raw(attacker, d, "submit", {"ads": [ad], "cluster": cluster})
        assert kind == "error" and "already has jobs" in msg
        assert list(_ads(d)) == [f"{cluster}.0"]
        assert f'Owner = "{victim.name}"' in _ads(d)[f"{cluster}.0"]
    finally:
        d.stop()
        d.kill_leftovers()


def test_constraint_and_all_act_on_the_callers_own_jobs(open_base: Path, attacker: User,
                                                        victim: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    try:
        env = d.env()
        for u in (victim, attacker):
            u.write(u.home / "j.sub", "executable = /bin/true\n" + NEVER_MATCHES +
                    "queue 2\n")
            assert u.cli(["submit", "j.sub"], env=env, cwd=u.home).rc == 0
        mine, theirs = {"2.0", "2.1"}, {"1.0": 1, "1.1": 1}

        def victims() -> dict[str, int]:
            return {j: s for j, s in d.statuses().items() if j.startswith("1.")}

        res = attacker.cli(["hold", "-all"], env=env, cwd=attacker.home)
        assert res.rc == 0 and {ln.split()[1] for ln in res.stdout.splitlines()} == mine
        assert victims() == theirs and d.statuses()["2.0"] == 5
        res = attacker.cli(["release", "-constraint", "true"], env=env, cwd=attacker.home)
        assert res.rc == 0 and {ln.split()[1] for ln in res.stdout.splitlines()} == mine
        # named jobs of someone else are still refused, and nothing is done
        for target in ("1", "1.0", victim.name):
            res = attacker.cli(["rm", target], env=env, cwd=attacker.home)
            assert res.rc == 1 and "permission denied" in res.stderr, res
        res = attacker.cli(["rm", "-constraint", "JobUniverse == 5"], env=env,
                           cwd=attacker.home)
        assert res.rc == 0 and {ln.split()[1] for ln in res.stdout.splitlines()} == mine
        wait_for(lambda: all(d.statuses().get(j) == 3 for j in mine), 30, d.output)
        res = attacker.cli(["rm", "-all"], env=env, cwd=attacker.home)
        assert res.rc == 1 and "no matching jobs" in res.stderr
        assert victims() == theirs
        # an admin (root) still acts on everyone's jobs
        assert "1.0" in d.cli("hold", "-all").stdout
        assert set(victims().values()) == {5}
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_fetched_job_ad_with_internal_attributes_is_refused(tmp_path: Path) -> None:
    """A fetch-work hook hands on job ads from elsewhere: one that names a scratch
    directory is refused like any bad fetched ad (REPLY_FETCH reject), the next runs."""
    hooks = Hooks(tmp_path / "hooks")
    before = fingerprint(Path("/etc"))
    me = pwd.getpwuid(os.getuid()).pw_name
    for n, extra in ((0, 'CondorpyPreparedScratch = "/etc"'), (1, "")):
        (hooks.queue / f"job{n:03d}").write_text(
            f'Cmd = "/bin/sh"\nArguments = "-c \'echo job $0\' j{n}"\nJobName = "j{n}"\n'
            f'RequestCpus = 1\nRequestMemory = 16\nRequestDisk = 1024\n'
            f'Iwd = "{hooks.base}"\nOwner = "{me}"\nOut = "out.{n}"\n{extra}\n')
    d = Daemon(tmp_path / "d", extra=hooks.config())
    d.start()
    try:
        wait_for(lambda: "exit exit j1 noclaim" in hooks.lines(), 60,
                 lambda: f"{hooks.lines()}\n{d.output()}")
        assert "reply reject j0 noclaim" in hooks.lines()
        assert not [ln for ln in hooks.lines() if "j0" in ln and "reject" not in ln]
        assert "CondorpyPreparedScratch, which only condorpy sets" in d.output()
        assert not (hooks.base / "out.0").exists()
        assert (hooks.base / "out.1").read_text() == "job j1\n"
        assert ['JobName = "j1"' in ad for ad in d.history_ads()] == [True]
        assert fingerprint(Path("/etc")) == before
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_reservation_is_kept_across_a_restart_and_used_once(tmp_path: Path) -> None:
    ad = ClassAd.parse_old('Cmd = "/bin/true"\nOwner = "v"')
    with JobStore(tmp_path) as st:
        cid = st.new_cluster_id(owner_uid=1001)
    with JobStore(tmp_path) as st:
        with pytest.raises(QueueError, match="reserved for another user"):
            st.submit([ad], cid, owner_uid=1002)
        assert st.submit([ad], cid, owner_uid=1001) == cid
        with pytest.raises(QueueError, match="already has jobs"):
            st.submit([ad], cid, owner_uid=1001)
        unowned = st.new_cluster_id()
        with pytest.raises(QueueError, match="reserved for no one"):
            st.submit([ad], unowned, owner_uid=1001)
        assert [r.job_id.cluster for r in st.jobs()] == [cid]
