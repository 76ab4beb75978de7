"""Jobs whose files travel: submitted with condor_submit's defaults (should_transfer_files
IF_NEEDED) to a real HTCondor 23.9.6 pool from a directory condorpy cannot see, they run
on condorpy, which has another FILESYSTEM_DOMAIN; their inputs come through the
shadow's file transfer and their outputs go back into the submit directory."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.pool.jobs import history, queued
from tests.pool.jobs import submit_inside as _submit
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool
# every test has its own daemon and job directory: the pool lane's workers may share
# them out (tests/pool/conftest.py)
POOL_TESTS_APART = True

HOST = "condorpy-transfer.example"

CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = condorpy.example
FILESYSTEM_DOMAIN = condorpy.example
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
CONDORPY_POOL_ACCEPT_CLAIMS = True
UPDATE_INTERVAL = 600
NUM_CPUS = 2
MEMORY = 2048
"""

JOB = """\
#!/bin/sh
set -e
echo "iwd=$PWD scratch=$_CONDOR_SCRATCH_DIR"
cat in.txt > result.txt
cat data/sub/deep.txt >> result.txt
test -x data/tool.sh && echo tool-is-executable >> result.txt
test -f empty.txt && test ! -s empty.txt && echo empty-is-empty >> result.txt
md5sum big.bin | cut -d' ' -f1 >> result.txt
stat -c %a data/private.txt >> result.txt
mkdir newdir && echo x > newdir/f
: > made-empty.txt
echo err-line >&2
"""


@pytest.fixture
def daemon(tmp_path: Path, refpool: RefPool) -> Iterator[Daemon]:
    # the job's user (nobody: alice has no account here) must reach its scratch
    # directory, so EXECUTE is world-searchable, as HTCondor wants it
    execute = Path(tempfile.mkdtemp(prefix="condorpy-ft-execute-", dir="/tmp"))
    execute.chmod(0o755)
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST)
               + f"EXECUTE = {execute}\n", cpus=2)
    d.execute = execute      # type: ignore[attr-defined]
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()
    shutil.rmtree(execute, ignore_errors=True)


def test_a_job_with_input_files_a_directory_and_a_remap_gets_its_outputs_back(
        daemon: Daemon, refpool: RefPool, submitdir: Path) -> None:
    (submitdir / "job.sh").write_text(JOB)
    (submitdir / "job.sh").chmod(0o755)
    (submitdir / "in.txt").write_text("input line\n")
    (submitdir / "empty.txt").write_text("")
    sub = submitdir / "data" / "sub"
    sub.mkdir(parents=True)
    (sub / "deep.txt").write_text("deep line\n")
    (submitdir / "data" / "tool.sh").write_text("#!/bin/sh\n")
    (submitdir / "data" / "tool.sh").chmod(0o755)
    (submitdir / "data" / "private.txt").write_text("p\n")
    (submitdir / "data" / "private.txt").chmod(0o640)
    big = os.urandom(3 * 1024 * 1024 + 17)     # several data messages and a short one
    (submitdir / "big.bin").write_bytes(big)
    cluster = _submit(refpool, submitdir, """\
executable = job.sh
transfer_input_files = in.txt, data, empty.txt, big.bin
transfer_output_remaps = "result.txt = result.renamed"
output = out.txt
error = err.txt
log = job.log
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
    wait_for(lambda: queued(refpool, cluster) == 0, 240,
             lambda: f"still queued: {refpool.condor('condor_q', '-nobatch', '-hold', check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-4000:]}")
    done = history(refpool, cluster, "JobStatus", "ExitCode", "LastRemoteHost")
    assert done[0][:2] == ["4", "0"], f"{done}\n{daemon.output()[-4000:]}"
    assert done[0][2].endswith(f"@{HOST}")
    # the remap was applied: result.txt came back as result.renamed
    result = (submitdir / "result.renamed").read_text().splitlines()
    assert not (submitdir / "result.txt").exists()
    assert result == ["input line", "deep line", "tool-is-executable", "empty-is-empty",
                      hashlib.md5(big).hexdigest(), "640"], result
    out = (submitdir / "out.txt").read_text()
    m = re.match(r"iwd=(\S+) scratch=(\S+)\n\Z", out)
    assert m and m.group(1) == m.group(2), out
    scratch = Path(m.group(1))
    assert scratch.parent == daemon.execute      # type: ignore[attr-defined]
    assert not scratch.exists(), "the scratch directory was left behind"
    assert (submitdir / "err.txt").read_text() == "err-line\n"
    # a new empty file comes back; a new directory not named in the outputs does not
    assert (submitdir / "made-empty.txt").read_bytes() == b""
    assert not (submitdir / "newdir").exists()
    # the inputs were not sent back
    assert (submitdir / "in.txt").read_text() == "input line\n"
    assert "Job terminated" in (submitdir / "job.log").read_text()
    # the job ran in a directory condorpy made, never in the submit directory
    assert not Path("/home/alice").joinpath(submitdir.name).exists()


def test_an_evicted_job_with_on_exit_or_evict_takes_its_files_to_the_next_run(
        daemon: Daemon, refpool: RefPool, submitdir: Path) -> None:
    (submitdir / "job.sh").write_text("""\
#!/bin/sh
n=$(cat count 2>/dev/null || echo 0)
n=$((n + 1))
echo $n > count
echo "run $n"
if [ "$n" -lt 2 ]; then touch started; exec sleep 300; fi
""")
    (submitdir / "job.sh").chmod(0o755)
    cluster = _submit(refpool, submitdir, """\
executable = job.sh
when_to_transfer_output = ON_EXIT_OR_EVICT
output = out.txt
log = job.log
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
    execute: Path = daemon.execute      # type: ignore[attr-defined]
    wait_for(lambda: any((p / "started").exists() for p in execute.glob("dir_pool_*")), 180,
             lambda: f"never started: {daemon.output()[-4000:]}")
    daemon.call("vacate", fast=False)
    wait_for(lambda: queued(refpool, cluster) == 0, 240,
             lambda: f"still queued: {refpool.condor('condor_q', '-nobatch', '-hold', check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-4000:]}")
    done = history(refpool, cluster, "JobStatus", "ExitCode", "NumJobStarts")
    assert done[0][:2] == ["4", "0"], f"{done}\n{daemon.output()[-4000:]}"
    # the first run's count came back with the spooled files, so the second run ended
    assert (submitdir / "count").read_text() == "2\n"
    # the second run's stdout; a file the first run made and the second left alone
    # comes back too (it was spooled)
    assert (submitdir / "out.txt").read_text() == "run 2\n"
    assert (submitdir / "started").exists()
    log = (submitdir / "job.log").read_text()
    assert "Job was evicted" in log and "Job terminated" in log, log
    assert not list(execute.glob("dir_pool_*"))


def test_a_missing_output_file_holds_the_job_with_htcondors_reason(
        daemon: Daemon, refpool: RefPool, submitdir: Path) -> None:
    (submitdir / "job.sh").write_text("#!/bin/sh\necho made > made.txt\n")
    (submitdir / "job.sh").chmod(0o755)
    cluster = _submit(refpool, submitdir, """\
executable = job.sh
transfer_output_files = made.txt, missing.txt
log = job.log
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")

    def held() -> bool:
        res = refpool.condor("condor_q", str(cluster), "-af", "JobStatus", check=False)
        return res.stdout.strip() == "5"
    wait_for(held, 240, lambda: f"not held: {daemon.output()[-3000:]}")
    res = refpool.condor("condor_q", str(cluster), "-af:,", "HoldReasonCode",
                         "HoldReasonSubCode", "HoldReason")
    code, sub, reason = [p.strip() for p in res.stdout.split(",", 2)]
    # the shadow reads the failure in condorpy's TransferAck and holds the job in its
    # own words, as with HTCondor's starter (TransferOutputError, errno ENOENT)
    assert (code, sub) == ("12", "2"), res.stdout
    assert re.match(rf"Transfer output files failure at execution point slot1_\d+@"
                    rf"{re.escape(HOST)} while sending files to access point \S+\. "
                    r"Details: reading from \S+/missing\.txt: \(errno 2\) No such file "
                    r"or directory", reason), reason
    # what could be sent was sent, as HTCondor does
    assert (submitdir / "made.txt").read_text() == "made\n"
    assert "Job was held" in (submitdir / "job.log").read_text()
    assert not list(daemon.execute.glob("dir_pool_*"))      # type: ignore[attr-defined]


def test_a_hold_condorpys_starter_decides_reaches_the_pool_with_its_reason(
        daemon: Daemon, refpool: RefPool, submitdir: Path) -> None:
    cluster = _submit(refpool, submitdir, """\
executable = /nonexistent/program
transfer_executable = false
log = job.log
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")

    def held() -> bool:
        res = refpool.condor("condor_q", str(cluster), "-af", "JobStatus", check=False)
        return res.stdout.strip() == "5"
    wait_for(held, 240, lambda: f"not held: {daemon.output()[-3000:]}")
    res = refpool.condor("condor_q", str(cluster), "-af:,", "HoldReasonCode", "HoldReason")
    code, reason = [p.strip() for p in res.stdout.split(",", 1)]
    # told through ulog as a critical RemoteErrorEvent: the shadow names the slot
    assert code != "0" and reason.startswith(f"Error from slot1_"), res.stdout
    assert "/nonexistent/program" in reason, reason
