"""Issue 25 through a real daemon: a held job whose periodic_release runs out of its
evaluation budget is logged once and not evaluated again at every
PERIODIC_EXPR_INTERVAL, until a qedit changes its ad; other jobs' policies go on."""

from __future__ import annotations

import re
from pathlib import Path

from tests.startd.daemon_helpers import Daemon, running, wait_for

HELD, REMOVED = 5, 3


def _cluster(out: str) -> int:
    found = re.search(r"cluster (\d+)", out)
    assert found, out
    return int(found.group(1))


def _start_log(d: Daemon) -> str:
    return (d.state / "log" / "StartLog").read_text()


def test_a_held_jobs_costly_release_is_logged_once_until_its_ad_changes(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    d = Daemon(tmp_path / "d", extra="START = False\nPERIODIC_EXPR_INTERVAL = 1\n")
    with running(d):
        (work / "j.sub").write_text("executable = /bin/true\nhold = true\nqueue\n"
                                    "hold = false\nqueue 2\n")
        c = _cluster(d.cli("submit", "j.sub", cwd=work).stdout)
        held, others = f"{c}.0", [f"{c}.1", f"{c}.2"]
        # made costly after submit (submit refuses it): A22 doubles through 22 levels
        names = [f"A{i}" for i in range(23)] + ["PeriodicRelease"]
        texts = ["1"] + [f"A{i - 1} + A{i - 1}" for i in range(1, 23)] + ["A22 > 0"]
        d.call("qedit", ids=[held], attrs=names, values=texts)
        line = f"job {held} (held): The job attribute PeriodicRelease expression " \
               "'A22 > 0' exceeded its evaluation budget"
        wait_for(lambda: line in _start_log(d), 60, d.output)
        # two more walks of the queue, one after the other: each removes a job whose
        # periodic_remove was set only once the one before was seen removed
        for job in others:
            d.call("qedit", ids=[job], attrs=["PeriodicRemove"], values=["true"])
            wait_for(lambda: d.statuses().get(job) == REMOVED, 60, d.output)
        log = _start_log(d)
        assert log.count(line) == 1, log[-3000:]
        assert "not evaluated again until the job's ad changes" in log
        assert d.statuses()[held] == HELD
        # a qedit is a new ad: evaluated, and said, once more
        d.call("qedit", ids=[held], attrs=["Note"], values=['"edited"'])
        wait_for(lambda: _start_log(d).count(line) == 2, 60, d.output)
        assert d.call("status")["ads"]          # served throughout
