"""Issue #25, evaluation budgets, through a real daemon: a job whose expressions double
through 22 attribute references, or backtrack in a regular expression, is refused at
submit; one made costly after submit (qedit) is held when matched or when its periodic
policy is evaluated, with the reason; the daemon answers `status` all along and a normal
job still runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.startd.daemon_helpers import Daemon, running, wait_for

# (a|aa)+$ on a run of a's then something else backtracks Fibonacci(n) ways
CATASTROPHIC = 'regexp("(a|aa)+$", strcat("' + "a" * 40 + '", TARGET.Name, "!"))'
HELD, COMPLETED = 5, 4


def _doubling(prefix: str = "+") -> str:
    """A0 = 1; Ai = A(i-1) + A(i-1) up to A22: 2**22 evaluations of A0 for A22."""
    return f"{prefix}A0 = 1\n" + "".join(f"{prefix}A{i} = A{i - 1} + A{i - 1}\n"
                                         for i in range(1, 23))


@pytest.fixture
def daemon(tmp_path: Path) -> Daemon:
    return Daemon(tmp_path / "d", extra="PERIODIC_EXPR_INTERVAL = 1\n")


def _answered(d: Daemon) -> None:
    """The daemon answers status with its slots (the call's own timeout is 30 s)."""
    assert d.call("status")["ads"]


def _cluster(out: str) -> int:
    """The cluster a submit's output names ("... submitted to cluster N.")."""
    found = re.search(r"cluster (\d+)", out)
    assert found, out
    return int(found.group(1))


def _ad(d: Daemon, job: str) -> str:
    cluster, proc = job.split(".")
    ads = d.call("q", constraint=f"ClusterId == {cluster} && ProcId == {proc}")["ads"]
    assert len(ads) == 1, ads
    return str(ads[0])


def test_costly_jobs_are_refused_or_held_and_the_daemon_keeps_serving(
        daemon: Daemon, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with running(daemon) as d:
        # refused at submit: the doubling job of the issue, and a catastrophic regexp
        (work / "double.sub").write_text("executable = /bin/true\n" + _doubling() +
                                         "requirements = A22 > 0\nqueue\n")
        res = d.cli("submit", "double.sub", cwd=work, check=False)
        assert res.returncode != 0
        assert "exceed the evaluation budget" in res.stderr, res.stderr
        assert "nothing was submitted" in res.stderr
        _answered(d)
        (work / "regex.sub").write_text("executable = /bin/true\n"
                                        f"requirements = {CATASTROPHIC}\nqueue\n")
        res = d.cli("submit", "regex.sub", cwd=work, check=False)
        assert res.returncode != 0 and "it ran out in Requirements" in res.stderr, res.stderr
        _answered(d)
        assert d.statuses() == {}

        # made costly after submit: held when matched (its Requirements), or by its
        # periodic policy while it waits (it matches nothing)
        (work / "edited.sub").write_text("executable = /bin/true\nhold = true\nqueue\n"
                                         "requirements = false\nhold = false\nqueue\n")
        c = _cluster(d.cli("submit", "edited.sub", cwd=work).stdout)
        matched, waiting = f"{c}.0", f"{c}.1"
        d.call("qedit", ids=[matched], attrs=["Requirements"], values=[CATASTROPHIC])
        d.call("release", ids=[matched])
        names = [f"A{i}" for i in range(23)] + ["PeriodicHold"]
        texts = ["1"] + [f"A{i - 1} + A{i - 1}" for i in range(1, 23)] + ["A22 > 0"]
        d.call("qedit", ids=[waiting], attrs=names, values=texts)
        _answered(d)
        wait_for(lambda: d.statuses().get(matched) == HELD and
                 d.statuses().get(waiting) == HELD, 60, d.output)
        ad = _ad(d, matched)
        assert "exceeded their evaluation budget" in ad and "HoldReasonCode = 26" in ad, ad
        ad = _ad(d, waiting)
        assert ("The job attribute PeriodicHold expression 'A22 > 0' exceeded its "
                "evaluation budget") in ad and "HoldReasonCode = 5" in ad, ad
        _answered(d)

        # and an ordinary job runs to its end
        (work / "ok.sub").write_text("executable = /bin/true\nqueue\n")
        ok = f"{_cluster(d.cli('submit', 'ok.sub', cwd=work).stdout)}.0"
        wait_for(lambda: d.statuses().get(ok) == COMPLETED, 60, d.output)
        _answered(d)
        assert "exceeded" in d.whole_log()


def test_a_job_that_makes_the_machine_s_start_run_out_is_held_not_offered_again(
        tmp_path: Path) -> None:
    """START is the administrator's, but what it reads of the job is the job's: an
    attribute made to double through 22 references makes the claim refused for its
    budget, and the local schedd holds the job (code 26, the reason naming START) instead
    of paying that cost on every match pass."""
    work = tmp_path / "work"
    work.mkdir()
    d = Daemon(tmp_path / "d", extra="START = TARGET.A22 =!= 0\n")
    with running(d):
        (work / "job.sub").write_text("executable = /bin/true\nhold = true\nqueue\n")
        job = f"{_cluster(d.cli('submit', 'job.sub', cwd=work).stdout)}.0"
        names = [f"A{i}" for i in range(23)]
        texts = ["1"] + [f"A{i - 1} + A{i - 1}" for i in range(1, 23)]
        d.call("qedit", ids=[job], attrs=names, values=texts)
        d.call("release", ids=[job])
        wait_for(lambda: d.statuses().get(job) == HELD, 60, d.output)
        ad = _ad(d, job)
        assert "START exceeded the evaluation budget" in ad, ad
        assert "HoldReasonCode = 26" in ad, ad
        _answered(d)
