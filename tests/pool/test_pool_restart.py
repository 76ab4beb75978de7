"""A condorpy daemon restarting under a job a real 23.9.6 shadow runs on it.

condorpy cannot yet be reconnected to (it tells the shadow ``HasReconnect = False``), so
the job must never run on unseen: a stopping daemon ends it and tells the shadow; a
killed daemon's successor finds the job's starter in its store and stops it. Either way
the job goes back to its schedd's queue, runs again, and completes once, and no two runs
of it ever overlap."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.pool.test_pool_jobs import (CONFIG, HOST, _cmdline, history, jobdir,  # noqa: F401
                                       queued, submit)
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_restart_under_a_pool_job_stops_it_and_it_runs_again_once(
        tmp_path: Path, refpool: RefPool, jobdir: Path, sig: signal.Signals) -> None:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=4)
    d.start()
    runs, overlap = jobdir / "runs", jobdir / "overlap"
    try:
        # Each run notes its pid, and whether an earlier run is still alive; the first
        # run would outlast the test, so only its being stopped ends it.
        cluster = submit(refpool, jobdir, f"""\
executable = /bin/sh
arguments = "-c 't=3; for p in $(cat {runs} 2>/dev/null); do t=1; [ -e /proc/$p ] && echo $p >> {overlap}; done; echo $$ >> {runs}; [ $t = 1 ] || t=300; sleep $t; exit 3'"
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
        wait_for(runs.exists, 120, lambda: d.output()[-3000:])
        first = runs.read_text().split()[0]
        assert "sh" in _cmdline(first)
        d.restart(sig)
        wait_for(lambda: _cmdline(first) == "", 30, lambda: d.output()[-3000:])
        if sig == signal.SIGKILL:
            wait_for(lambda: "is stopped" in d.output(), 10, d.output)
        wait_for(lambda: queued(refpool, cluster) == 0, 240, lambda: d.output()[-3000:])
        assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "3"]
        assert len(runs.read_text().split()) == 2, runs.read_text()
        assert not overlap.exists(), overlap.read_text()
        log = (jobdir / "job.log").read_text()
        assert log.count("Job terminated") == 1, log
        assert "(return value 3)" in log, log
        # the user log says why the first run ended, before the second began
        assert log.count("Job executing") == 2, log
        first_end = log.index("Job executing", log.index("Job executing") + 1)
        why = "Shadow exception!" if sig == signal.SIGKILL else "Job was evicted"
        assert why in log[:first_end], log
    finally:
        d.stop()
        d.kill_leftovers()
