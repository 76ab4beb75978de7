"""Issue #23 items 3 and 4, end to end through a root daemon and its local queue: file
transfer for local jobs (input in as the job's user, output back as the submitter,
remaps, holds on missing files, the sandbox removed) and the README's example
submitted by root and by an ordinary user, its log written with the submitter's
rights.

The ordinary user is a real account (tests/attackers.py); everything needs root.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.queue.records import ad_of_text
from tests.attackers import User, attacker, open_base  # noqa: F401
from tests.startd.daemon_helpers import Daemon, no_sandbox_left, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: makes users")

# root's jobs run as nobody (the default), ordinary users' as themselves
CONFIG = "CONDORPY_ALLOW_ROOT_JOBS = false\n"


def _attr(ad: str, name: str) -> str | None:
    m = re.search(rf"(?:^|[\[;]\s*){name}\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^;\]]+)", ad)
    return m.group(1).strip() if m else None


def _ads(d: Daemon, cluster: int) -> list[str]:
    with d.db() as db:
        return [ad_of_text(r[0]).to_new() for r in db.execute(
            "SELECT ad FROM jobs WHERE cluster=? UNION ALL SELECT ad FROM history "
            "WHERE cluster=?", (cluster, cluster))]


def _submit_as(u: User, d: Daemon, text: str, name: str = "j.sub") -> int:
    u.write(u.home / name, text)
    res = u.cli(["submit", name], env=d.env())
    assert res.rc == 0, res
    m = re.search(r"cluster (\d+)", res.stdout)
    assert m, res.stdout
    return int(m.group(1))


def _done(d: Daemon, cluster: int, count: int = 1, status: int = 4) -> None:
    def ended() -> bool:
        st = d.statuses()
        return sum(1 for k, v in st.items() if k.startswith(f"{cluster}.") and v == status) \
            == count
    wait_for(ended, 90, lambda: f"{d.statuses()} {_ads(d, cluster)} {d.output()}")



@pytest.fixture
def daemon(open_base: Path) -> Daemon:  # noqa: F811
    d = Daemon(open_base / "d", CONFIG)
    d.start()
    try:
        yield d  # type: ignore[misc]
    finally:
        d.stop()
        d.kill_leftovers()


JOB = """#!/bin/sh
set -e
# what arrived, and as whom
ls -A . | sort > seen.txt
stat -c '%U %n' in.txt tree/a.txt b.txt >> seen.txt
cat in.txt > copied.txt
echo made > made.txt
mkdir newdir && echo inner > newdir/inner.txt
echo changed >> touched.txt
echo to-stdout
echo to-stderr >&2
"""


def test_input_output_and_remaps_of_a_local_job(daemon: Daemon, attacker: User) -> None:
    """should_transfer_files = YES: the input (a file, a directory, a directory's
    contents, the executable) arrives in the scratch directory as the job's user; the
    files the job made or changed come back to Iwd as the submitter, remapped; an
    unchanged input and a new directory do not; stdout and stderr reach Out and Err;
    the sandbox is gone."""
    u = attacker
    u.write(u.home / "job.sh", JOB, 0o755)
    u.write(u.home / "in.txt", "input\n")
    u.write(u.home / "touched.txt", "before\n")
    for sub in ("tree", "flat"):
        (u.home / sub).mkdir()
        os.chown(u.home / sub, u.uid, u.gid)
    u.write(u.home / "tree" / "a.txt", "a\n")
    u.write(u.home / "flat" / "b.txt", "b\n")
    cluster = _submit_as(u, daemon, """\
executable = job.sh
should_transfer_files = YES
transfer_input_files = in.txt, tree, flat/, touched.txt
transfer_output_remaps = "made.txt = renamed.txt; copied.txt=out/copied.txt"
output = job.out
error = job.err
log = job.log
queue
""")
    (u.home / "out").mkdir()
    os.chown(u.home / "out", u.uid, u.gid)
    _done(daemon, cluster)
    seen = (u.home / "seen.txt").read_text().splitlines()
    assert {"in.txt", "tree", "b.txt", "touched.txt", "job.sh", "_condor_stdout",
            "_condor_stderr"} <= set(seen), seen
    assert f"{u.name} in.txt" in seen and f"{u.name} tree/a.txt" in seen
    assert (u.home / "renamed.txt").read_text() == "made\n"
    assert not (u.home / "made.txt").exists()
    assert (u.home / "out" / "copied.txt").read_text() == "input\n"
    assert (u.home / "touched.txt").read_text() == "before\nchanged\n"
    assert not (u.home / "newdir").exists()     # a new directory comes back only named
    assert (u.home / "job.out").read_text() == "to-stdout\n"
    assert (u.home / "job.err").read_text() == "to-stderr\n"
    for name in ("renamed.txt", "out/copied.txt", "job.out", "seen.txt"):
        assert (u.home / name).stat().st_uid == u.uid, name
    assert not (u.home / "_condor_stdout").exists()
    assert "Job terminated" in (u.home / "job.log").read_text()
    no_sandbox_left(daemon)


def test_named_outputs_directories_with_and_without_slash(daemon: Daemon,
                                                          attacker: User) -> None:
    """transfer_output_files names what comes back: ``d`` the directory itself,
    ``e/`` its contents, a file under its base name; nothing else."""
    u = attacker
    u.write(u.home / "job.sh", "#!/bin/sh\nmkdir -p d/sub e f\necho 1 > d/sub/x\n"
            "echo 2 > e/y\necho 3 > f/z\necho 4 > other\n", 0o755)
    cluster = _submit_as(u, daemon, """\
executable = job.sh
should_transfer_files = YES
transfer_output_files = d, e/, f/z
queue
""")
    _done(daemon, cluster)
    assert (u.home / "d" / "sub" / "x").read_text() == "1\n"
    assert (u.home / "y").read_text() == "2\n" and not (u.home / "e").exists()
    assert (u.home / "z").read_text() == "3\n" and not (u.home / "f").exists()
    assert not (u.home / "other").exists()
    no_sandbox_left(daemon)


def test_a_missing_input_file_holds_the_job_as_htcondor_does(daemon: Daemon,
                                                             attacker: User) -> None:
    u = attacker
    cluster = _submit_as(u, daemon, """\
executable = /bin/true
should_transfer_files = YES
transfer_input_files = never-exist.file
log = job.log
queue
""")
    _done(daemon, cluster, status=5)
    ad = _ads(daemon, cluster)[0]
    # HTCondor's TransferInputError with the errno (test_io_ft_error_reporting.py)
    assert _attr(ad, "HoldReasonCode") == "13" and _attr(ad, "HoldReasonSubCode") == "2"
    reason = _attr(ad, "HoldReason") or ""
    assert reason.startswith('"Transfer input files failure at access point '), reason
    assert f"reading from file {u.home}/never-exist.file: (errno 2) No such file or " \
        "directory" in reason, reason
    log = (u.home / "job.log").read_text()
    assert "Job was held" in log and "Code 13 Subcode 2" in log
    assert "Job executing" not in log
    no_sandbox_left(daemon)


def test_a_missing_output_file_holds_the_job_after_sending_the_rest(
        daemon: Daemon, attacker: User) -> None:
    u = attacker
    cluster = _submit_as(u, daemon, """\
executable = /bin/sh
arguments = "-c 'echo made > made.txt'"
should_transfer_files = YES
transfer_output_files = made.txt, missing.txt
log = job.log
queue
""")
    _done(daemon, cluster, status=5)
    ad = _ads(daemon, cluster)[0]
    assert _attr(ad, "HoldReasonCode") == "12" and _attr(ad, "HoldReasonSubCode") == "2"
    reason = _attr(ad, "HoldReason") or ""
    assert re.match(r'"Transfer output files failure at execution point slot\S+ while '
                    r"sending files to access point \S+\. Details: reading from "
                    r"\S+/missing\.txt: \(errno 2\) No such file or directory", reason), \
        reason
    assert (u.home / "made.txt").read_text() == "made\n"
    assert "Job was held" in (u.home / "job.log").read_text()
    no_sandbox_left(daemon)


def test_on_success_brings_nothing_back_from_a_failed_job(daemon: Daemon,
                                                          attacker: User) -> None:
    u = attacker
    cluster = _submit_as(u, daemon, """\
executable = /bin/sh
arguments = "-c 'echo made > made.txt; exit 3'"
should_transfer_files = YES
when_to_transfer_output = ON_SUCCESS
queue
""")
    _done(daemon, cluster)
    assert _attr(_ads(daemon, cluster)[0], "ExitCode") == "3"
    assert not (u.home / "made.txt").exists()


def test_the_slot_ad_advertises_file_transfer(daemon: Daemon) -> None:
    res = daemon.cli("status", "-af", "HasFileTransfer")
    assert set(res.stdout.split()) == {"true"}, res.stdout


# --- the README's example -------------------------------------------------------------

README = """\
executable = /bin/echo
arguments  = hello from $(Cluster).$(Process)
output     = hello.$(Process).out
log        = hello.log
request_memory = 64
queue 3
"""


def _readme_results(where: Path, cluster: int) -> None:
    for proc in range(3):
        assert (where / f"hello.{proc}.out").read_text() == \
            f"hello from {cluster}.{proc}\n"
    log = (where / "hello.log").read_text()
    assert log.count("Job submitted from host") == 3, log
    assert log.count("Job executing on host") == 3, log
    assert log.count("Job terminated.") == 3, log


def test_the_readme_example_as_root(daemon: Daemon, open_base: Path) -> None:  # noqa: F811
    """Root's jobs run as nobody, who cannot write root's directory: the job's files
    travel (IF_NEEDED between two accounts) and its log and outputs are written as
    root, the submitter."""
    where = open_base / "root-submits"
    where.mkdir(mode=0o755)
    (where / "hello.sub").write_text(README)
    res = subprocess.run([sys.executable, "-m", "condorpy", "submit", "hello.sub"],
                         env=daemon.env(), cwd=where, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    m = re.search(r"3 job\(s\) submitted to cluster (\d+)", res.stdout)
    assert m, res.stdout
    cluster = int(m.group(1))
    _done(daemon, cluster, 3)
    _readme_results(where, cluster)
    for name in ("hello.log", "hello.0.out"):
        assert (where / name).stat().st_uid == 0
    ad = _ads(daemon, cluster)[0]
    assert _attr(ad, "Owner") == '"root"'
    no_sandbox_left(daemon)


def test_the_readme_example_as_a_user(daemon: Daemon, attacker: User) -> None:
    u = attacker
    cluster = _submit_as(u, daemon, README, "hello.sub")
    _done(daemon, cluster, 3)
    _readme_results(u.home, cluster)
    for name in ("hello.log", "hello.0.out"):
        assert (u.home / name).stat().st_uid == u.uid


def test_a_job_running_as_another_account_still_writes_its_owners_log(
        open_base: Path, attacker: User) -> None:  # noqa: F811
    """With STARTER_ALLOW_RUNAS_OWNER = false the job runs as nobody; its log is
    still written as its submitter, who alone can write the directory."""
    d = Daemon(open_base / "d2", CONFIG + "STARTER_ALLOW_RUNAS_OWNER = false\n")
    d.start()
    try:
        u = attacker
        cluster = _submit_as(u, d, "executable = /usr/bin/id\narguments = -un\n"
                             "output = who.out\nlog = who.log\nqueue\n")
        _done(d, cluster)
        assert (u.home / "who.out").read_text() == "nobody\n"
        assert "Job terminated." in (u.home / "who.log").read_text()
        assert (u.home / "who.log").stat().st_uid == u.uid
    finally:
        d.stop()
        d.kill_leftovers()


EVICTED = """#!/bin/sh
# the first run leaves a marker outside the sandbox and waits to be vacated; the
# next finds it and ends
if [ -f "$1" ]; then
    echo second >> progress.txt
    exit 0
fi
echo first > progress.txt
touch "$1"
exec sleep 120
"""


@pytest.mark.parametrize("when,expected", [("ON_EXIT_OR_EVICT", "first\nsecond\n"),
                                           ("ON_EXIT", "second\n")])
def test_an_evicted_job_keeps_its_output_only_with_on_exit_or_evict(
        daemon: Daemon, attacker: User, when: str, expected: str) -> None:
    """ON_EXIT_OR_EVICT: at the eviction the output goes to the job's spool and comes
    back into the next run's scratch directory; ON_EXIT: the next run starts from the
    input alone. Either way only the exit brings the output to Iwd."""
    u = attacker
    u.write(u.home / "job.sh", EVICTED, 0o755)
    marker = u.home / "marker"
    cluster = _submit_as(u, daemon, f"""\
executable = job.sh
arguments = {marker}
should_transfer_files = YES
when_to_transfer_output = {when}
log = job.log
queue
""")
    wait_for(marker.exists, 60, daemon.output)
    assert not (u.home / "progress.txt").exists()
    daemon.cli("vacate")
    _done(daemon, cluster)
    assert (u.home / "progress.txt").read_text() == expected
    log = (u.home / "job.log").read_text()
    assert "Job was evicted" in log and "Job terminated." in log
    no_sandbox_left(daemon)
    spooled = list(daemon.state.glob("spool/jobs/*/spooled/*"))
    assert spooled == [], spooled


# --- what root does on the submitter's and the job's behalf -----------------------------

def test_input_is_read_with_the_submitters_rights_only(daemon: Daemon,
                                                       attacker: User) -> None:
    """Naming root's unreadable file as input gets the submitter nothing: the copy
    reads as the submitter, so the job is held with EACCES as its subcode."""
    u = attacker
    cluster = _submit_as(u, daemon, """\
executable = /bin/true
should_transfer_files = YES
transfer_input_files = /etc/shadow
queue
""")
    _done(daemon, cluster, status=5)
    ad = _ads(daemon, cluster)[0]
    assert _attr(ad, "HoldReasonCode") == "13" and _attr(ad, "HoldReasonSubCode") == "13"
    assert "reading from file /etc/shadow: (errno 13) Permission denied" in ad
    no_sandbox_left(daemon)


def test_output_links_and_remaps_reach_only_what_the_users_could(
        daemon: Daemon, attacker: User) -> None:
    """A job's link to root's file, named as output, is read as the job's user
    (refused), and a remap onto root's file is written as the submitter (refused): the
    job is held and root's files are unchanged."""
    u = attacker
    before = {p: open(p, "rb").read() for p in ("/etc/shadow", "/etc/passwd")}
    cluster = _submit_as(u, daemon, """\
executable = /bin/sh
arguments = "-c 'ln -s /etc/shadow stolen; echo x > planted'"
should_transfer_files = YES
transfer_output_files = stolen, planted
transfer_output_remaps = "planted = /etc/passwd"
queue
""")
    _done(daemon, cluster, status=5)
    ad = _ads(daemon, cluster)[0]
    assert _attr(ad, "HoldReasonCode") == "12" and _attr(ad, "HoldReasonSubCode") == "13"
    assert "/stolen: (errno 13) Permission denied" in ad
    assert not (u.home / "stolen").exists()
    for path, data in before.items():
        assert open(path, "rb").read() == data
    no_sandbox_left(daemon)


# --- an unprivileged daemon's starter -----------------------------------------------------

def _readme_job_as_an_ordinary_users_starter(u: User, should: str) -> dict[str, object]:
    """The README's first job as a starter run by an ordinary user runs it (the
    daemon's starter when the daemon is that user's): in the user's own process,
    forked from this one, since the user cannot start this test's interpreter."""
    from condorpy.starter.settings import StarterSettings
    from condorpy.starter.starter import Starter
    execute = u.home / "execute"
    execute.mkdir(mode=0o755)
    os.chown(execute, u.uid, u.gid)
    job = {"ClusterId": 1, "ProcId": 0, "Owner": u.name, "CondorpySubmitter": u.name,
           "Cmd": "/bin/echo", "Arguments": "hello from 1.0", "Iwd": str(u.home),
           "Out": "hello.0.out", "Err": "/dev/null", "In": "/dev/null",
           "StarterUserLog": str(u.home / "hello.log"), "ShouldTransferFiles": should}

    def run() -> dict[str, object]:
        settings = StarterSettings(execute=str(execute), use_cgroups=False,
                                   update_interval_s=0.05)
        out = Starter(job, {"Name": "slot1@test", "Cpus": 1}, settings,
                      notice=lambda _t: None).run()
        return {"attrs": out.attributes, "left": os.listdir(execute)}
    res = u.call(run, env=dict(os.environ))
    assert res.kind == "ok", res
    assert isinstance(res.value, dict)
    return res.value


@pytest.mark.parametrize("should", ["IF_NEEDED", "YES"])
def test_the_readme_example_under_an_ordinary_users_starter(
        attacker: User, should: str) -> None:
    u = attacker
    done = _readme_job_as_an_ordinary_users_starter(u, should)
    assert done["attrs"]["ExitCode"] == 0, done  # type: ignore[index]
    assert done["left"] == []
    assert (u.home / "hello.0.out").read_text() == "hello from 1.0\n"
    log = (u.home / "hello.log").read_text()
    assert "Job executing on host" in log and "Job terminated." in log
    assert (u.home / "hello.log").stat().st_uid == u.uid


def test_fifos_among_inputs_or_outputs_block_nothing(daemon: Daemon, attacker: User) -> None:
    """A FIFO named as input, or sitting where an output goes, is refused at once (the
    copy never waits on it): the jobs are held, the daemon keeps serving."""
    u = attacker
    for name in ("in.fifo", "out.fifo"):
        u.run(["mkfifo", name])
    c1 = _submit_as(u, daemon, "executable = /bin/true\nshould_transfer_files = YES\n"
                    "transfer_input_files = in.fifo\nqueue\n")
    c2 = _submit_as(u, daemon, "executable = /bin/echo\narguments = hi\n"
                    "should_transfer_files = YES\noutput = out.fifo\nqueue\n", "o.sub")
    _done(daemon, c1, status=5)
    _done(daemon, c2, status=5)
    assert _attr(_ads(daemon, c1)[0], "HoldReasonCode") == "13"
    assert _attr(_ads(daemon, c2)[0], "HoldReasonCode") == "12"
    no_sandbox_left(daemon)
