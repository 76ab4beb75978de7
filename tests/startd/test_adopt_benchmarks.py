"""Re-adoption under the shipped configuration, where slots run their benchmarks at
start-up (RunBenchmarks is not False): taking a job back must not hand the policy
engine a time older than one it has already seen (found by the systemd lane, where
`systemctl restart` of the packaged service failed with "clock went backwards")."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.startd.daemon_helpers import Daemon, counts, submit, wait_for


def test_restart_with_benchmarks_re_adopts_the_running_job(tmp_path: Path) -> None:
    d = Daemon(tmp_path, extra="RUNBENCHMARKS = LastBenchmark == 0\n")
    d.start()
    try:
        work = tmp_path / "work"
        work.mkdir()
        submit(d, "executable = /bin/sh\narguments = \"-c 'sleep 4; echo ok'\"\n"
                  "output = out\nrequest_memory = 16\nqueue\n", work)
        wait_for(lambda: counts(d).get(2) == 1, 30, d.output)
        d.stop(signal.SIGTERM)
        d.start()
        assert "re-adopted starter" in d.output()
        wait_for(lambda: counts(d).get(4) == 1, 30, d.output)
        assert (work / "out").read_text() == "ok\n"
        assert "clock went backwards" not in d.output()
    finally:
        d.stop()
        d.kill_leftovers()
