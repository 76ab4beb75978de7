"""Issue #30, cases 1-3: the files and directories root touches on a user's behalf.

Written as the attacks: a job that races its sandbox's removal with links to root's
files, a FIFO as the user log and as the output, a submit naming a directory that is
not the job's as its scratch directory. Root's files are checked by fingerprint, the
daemon shown still serving. Unit tests of condorpy.starter.safefs drive the races
deterministically through its hook.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.queue.records import ad_of_text, ad_text
from condorpy.starter import safefs
from condorpy.starter.sandbox import Sandbox, remove_sandbox
from condorpy.starter.userlog import UserLog
from condorpy.starter.users import JobUser
from tests.attackers import User, attacker, fingerprint, open_base, victim  # noqa: F401
from tests.startd.daemon_helpers import Daemon, no_sandbox_left, wait_for

ROOT = os.geteuid() == 0


# --- victims: root's own file and directory, readable by all -------------------------

@pytest.fixture
def roots(open_base: Path) -> Iterator[dict[str, Path]]:
    vdir = open_base / "root_dir"
    vdir.mkdir(mode=0o755)
    os.chmod(vdir, 0o755)
    vfile = open_base / "root_file"
    vfile.write_text("root's own\n")
    os.chmod(vfile, 0o644)
    (vdir / "inside").write_text("also root's\n")
    os.chmod(vdir / "inside", 0o644)
    yield {"file": vfile, "dir": vdir, "inside": vdir / "inside"}


def _prints(paths: dict[str, Path]) -> dict[str, object]:
    return {k: fingerprint(p) for k, p in paths.items()}


def _as_job_user(u: User) -> JobUser:
    return JobUser(u.name, u.uid, u.gid, (u.gid,), True)


def _tree(top: Path, uid: int, gid: int) -> None:
    for d in ("a/b/c", "d", "e/f"):
        (top / d).mkdir(parents=True, exist_ok=True)
    for f in ("a/x", "a/b/y", "a/b/c/z", "d/w", "top"):
        (top / f).write_text(f)
    for dirpath, dirs, files in os.walk(top):
        for n in dirs + files + [""]:
            os.chown(os.path.join(dirpath, n), uid, gid, follow_symlinks=False)


# --- safefs.open_regular ------------------------------------------------------------

def test_a_fifo_is_refused_at_once_with_or_without_a_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    for flags in (os.O_WRONLY | os.O_APPEND | os.O_CREAT, os.O_RDONLY):
        with pytest.raises(safefs.NotRegularFile, match="it is a FIFO, not a regular file"):
            safefs.open_regular(str(fifo), flags)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)     # now an open would succeed
    try:
        with pytest.raises(safefs.NotRegularFile, match="FIFO"):
            safefs.open_regular(str(fifo), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    finally:
        os.close(reader)


def test_links_directories_and_devices_are_refused_dev_null_only_where_allowed(
        tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(safefs.NotRegularFile, match="symbolic link") as exc:
        safefs.open_regular(str(link), os.O_WRONLY | os.O_APPEND)
    assert exc.value.errno == errno.ELOOP
    fd = safefs.open_regular(str(link), os.O_RDONLY, follow=True)     # input may follow
    os.close(fd)
    with pytest.raises(safefs.NotRegularFile, match="directory"):
        safefs.open_regular(str(tmp_path), os.O_RDONLY)
    with pytest.raises(safefs.NotRegularFile, match="character device"):
        safefs.open_regular("/dev/null", os.O_WRONLY)
    with pytest.raises(safefs.NotRegularFile, match="character device"):
        safefs.open_regular("/dev/zero", os.O_RDONLY, allow_devnull=True)
    fd = safefs.open_regular("/dev/null", os.O_WRONLY, allow_devnull=True)
    os.close(fd)
    fd = safefs.open_regular(str(tmp_path / "new"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        assert not flags & os.O_NONBLOCK           # the job gets a blocking descriptor
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    finally:
        os.close(fd)


def test_user_log_refuses_a_fifo_and_a_link(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.log")
    with pytest.raises(safefs.NotRegularFile, match="FIFO"):
        UserLog.open(str(tmp_path / "fifo.log"), 1, 0)
    (tmp_path / "link.log").symlink_to(tmp_path / "elsewhere.log")
    with pytest.raises(OSError):
        UserLog.open(str(tmp_path / "link.log"), 1, 0)
    assert not (tmp_path / "elsewhere.log").exists()
    log = UserLog.open(str(tmp_path / "ok.log"), 1, 0)
    log.submitted("host")
    log.close()
    assert (tmp_path / "ok.log").read_text().startswith("000 (001.000.000)")


@pytest.mark.skipif(not ROOT, reason="needs root: the log is opened as another user")
def test_user_log_opened_as_root_reaches_only_what_the_user_can(
        open_base: Path, attacker: User) -> None:
    """Root's supplementary groups do not come along: a root-group-writable file is
    not the attacker's to write."""
    target = open_base / "group_writable.log"
    target.write_text("root's\n")
    os.chown(target, 0, 0)
    os.chmod(target, 0o664)
    before = fingerprint(target)
    creds = (os.geteuid(), os.getegid(), sorted(os.getgroups()))
    os.setgroups(sorted(set(creds[2]) | {0}))      # root's own group, as a daemon has
    try:
        with pytest.raises(PermissionError):
            UserLog.open(str(target), 1, 0, uid=attacker.uid, gid=attacker.gid,
                         groups=(attacker.gid,))
        assert (os.geteuid(), os.getegid()) == creds[:2]        # all given back
        assert 0 in os.getgroups()
    finally:
        os.setgroups(creds[2])
    assert fingerprint(target) == before


@pytest.mark.skipif(not ROOT, reason="needs root: the log is opened as another user")
@pytest.mark.parametrize("machine", ["native", "unknown"])
def test_user_log_opened_while_other_threads_run_changes_no_ids_of_theirs(
        open_base: Path, attacker: User, machine: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With another thread running (a pool transfer, the metrics server), only the
    opening thread becomes the user (native), or a child that became the user opens
    the log and hands it over (an architecture whose system calls are not known):
    the other threads' ids never change."""
    import platform
    import threading
    if machine == "unknown":
        monkeypatch.setattr(platform, "machine", lambda: "unknown-test-arch")
    stop = threading.Event()
    seen: set[int] = set()

    def watch() -> None:
        while not stop.is_set():
            seen.add(os.geteuid())
            time.sleep(0.0005)

    thread = threading.Thread(target=watch)
    thread.start()
    try:
        path = attacker.home / f"threads-{machine}.log"
        log = UserLog.open(str(path), 3, 0, uid=attacker.uid, gid=attacker.gid,
                           groups=(attacker.gid,))
        log.submitted("host")
        log.close()
        assert path.stat().st_uid == attacker.uid and "Job submitted" in path.read_text()
        fifo = attacker.home / f"t-{machine}.fifo"
        os.mkfifo(fifo, 0o666)
        os.chown(fifo, attacker.uid, attacker.gid)
        with pytest.raises(safefs.NotRegularFile, match="FIFO"):
            UserLog.open(str(fifo), 3, 0, uid=attacker.uid, gid=attacker.gid)
        with pytest.raises(PermissionError):
            UserLog.open("/etc/condorpy-test-never.log", 3, 0, uid=attacker.uid,
                         gid=attacker.gid)
    finally:
        stop.set()
        thread.join()
    assert seen == {0} and not os.path.exists("/etc/condorpy-test-never.log")


@pytest.mark.skipif(not ROOT, reason="needs root: the reader is root, the files a user's")
def test_root_reads_only_the_jobs_own_regular_files_below_its_directory(
        tmp_path: Path, roots: dict[str, Path], attacker: User) -> None:
    """A pool job's outputs are read by root (startd/poolside/transfer.py) and sent to the
    submitter: a directory of the output swapped for a link to root's directory, a
    hard link to root's file, a FIFO, are refused; the job's own file is read."""
    box = tmp_path / "dir_pool_1"
    (box / "sub").mkdir(parents=True)
    (box / "sub" / "out").write_text("mine")
    (box / "linkdir").symlink_to(roots["dir"])
    os.link(roots["file"], box / "hard")
    os.mkfifo(box / "fifo")
    for dirpath, dirs, files in os.walk(box):
        for n in dirs + files + [""]:
            os.chown(os.path.join(dirpath, n), attacker.uid, attacker.gid,
                     follow_symlinks=False)
    os.chown(roots["file"], 0, 0)
    fd = safefs.open_below(str(box), str(box / "sub" / "out"))
    assert os.read(fd, 10) == b"mine"
    os.close(fd)
    for name, why in (("linkdir/inside", "Too many levels|Not a directory"),
                      ("hard", "not owned by the owner"),
                      ("fifo", "it is a FIFO"), ("../x", "not below")):
        with pytest.raises(OSError, match=why):
            safefs.open_below(str(box), str(box / name))


# --- safefs.empty_tree / remove_dir_at ----------------------------------------------

@pytest.mark.skipif(not ROOT, reason="needs root: the walk is root's")
def test_a_directory_swapped_for_a_link_before_it_is_opened(
        tmp_path: Path, roots: dict[str, Path]) -> None:
    """The rmtree race of issue #30 case 2, made deterministic: just before root's walk
    reaches ``a`` the job renames it away and plants a link to root's directory (and
    one to root's file in its place). The links are unlinked as links."""
    top = tmp_path / "dir_1"
    top.mkdir()
    _tree(top, 65534, 65534)
    before = _prints(roots)
    swapped: list[str] = []

    def hook(path: str, name: str) -> None:
        if path == str(top) and name == "a" and not swapped:
            os.rename(top / "a", top / "a_moved")
            os.symlink(roots["dir"], top / "a")
            os.symlink(roots["file"], top / "a_moved" / "planted")
            swapped.append(name)

    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        problems = safefs.remove_dir_at(fd, "dir_1", str(top), hook=hook)
    finally:
        os.close(fd)
    assert swapped and problems == []
    assert not top.exists()
    assert _prints(roots) == before and roots["inside"].exists()


@pytest.mark.skipif(not ROOT, reason="needs root: the walk is root's")
def test_a_directory_renamed_while_it_is_emptied(tmp_path: Path,
                                                 roots: dict[str, Path]) -> None:
    """While root empties ``a`` through its descriptor, the job renames ``a`` away and
    puts a link to root's directory at its name: root goes on in the directory it
    opened, the link is unlinked, the renamed directory is found and removed."""
    top = tmp_path / "dir_2"
    top.mkdir()
    _tree(top, 65534, 65534)
    before = _prints(roots)
    done: list[bool] = []

    def hook(path: str, name: str) -> None:
        if path == str(top / "a") and not done:
            os.rename(top / "a", top / "renamed")
            os.symlink(roots["dir"], top / "a")
            done.append(True)

    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        problems = safefs.remove_dir_at(fd, "dir_2", str(top), hook=hook)
    finally:
        os.close(fd)
    assert done and problems == []
    assert not top.exists()
    assert _prints(roots) == before and roots["inside"].exists()


@pytest.mark.skipif(not ROOT, reason="needs root: a hard link to root's file")
def test_hard_links_to_roots_file_are_unlinked_never_changed(
        tmp_path: Path, roots: dict[str, Path], attacker: User) -> None:
    exe = tmp_path / "execute"
    exe.mkdir(mode=0o755)
    box = exe / "dir_3"
    box.mkdir()
    _tree(box, attacker.uid, attacker.gid)
    os.link(roots["file"], box / "hard")
    os.link(roots["inside"], box / "a" / "b" / "hard2")
    os.chmod(box / "a" / "b", 0)                 # a directory root's old code chmodded
    before = _prints(roots)
    exe_before = fingerprint(exe)
    problems = remove_sandbox(Sandbox(str(box)), _as_job_user(attacker))
    assert problems == [] and not box.exists()
    assert _prints(roots) == before and os.stat(roots["file"]).st_nlink == 1
    assert fingerprint(exe) == exe_before


@pytest.mark.skipif(not ROOT, reason="needs root and an ordinary account")
def test_removal_as_the_job_user_cannot_touch_what_the_job_could_not(
        tmp_path: Path, attacker: User) -> None:
    """The user's half of the removal runs as the job's user: a root-owned directory
    in the sandbox (as if the job had escalated) is beyond it and left to root's walk,
    which removes it through descriptors; the job's 0000 directories are its own and
    are opened by fchmod on their descriptors."""
    exe = tmp_path / "execute"
    exe.mkdir(mode=0o755)
    box = exe / "dir_4"
    box.mkdir()
    _tree(box, attacker.uid, attacker.gid)
    (box / "rootowned").mkdir()
    (box / "rootowned" / "f").write_text("x")
    os.chmod(box / "rootowned", 0o755)
    for d in ("a", "e/f"):
        os.chmod(box / d, 0)
    assert remove_sandbox(Sandbox(str(box)), _as_job_user(attacker)) == []
    assert not box.exists() and stat.S_IMODE(exe.stat().st_mode) == 0o755


def test_an_unprivileged_walk_removes_its_own_unwritable_directories(tmp_path: Path) -> None:
    """The same code runs without a switch where the job ran as the starter's own user
    (unprivileged starter): directories left mode 0000 or 0500 are its own."""
    top = tmp_path / "dir_5"
    top.mkdir()
    _tree(top, os.geteuid(), os.getegid())
    os.chmod(top / "a" / "b", 0o500)
    os.chmod(top / "e", 0)

    # opened first: as the ordinary user the test's own tmp_path is not reachable
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)

    def walk() -> list[str]:
        return safefs.remove_dir_at(fd, "dir_5", str(top))

    if ROOT:
        # as an ordinary user: make the tree theirs and walk as them
        nobody = 65534
        for dirpath, dirs, files in os.walk(top):
            for n in dirs + files + [""]:
                os.chown(os.path.join(dirpath, n), nobody, nobody)
        os.chmod(tmp_path, 0o777)
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(nobody)
                os.setuid(nobody)
                os._exit(0 if walk() == [] else 1)
            finally:
                os._exit(2)
        assert os.waitpid(pid, 0)[1] == 0
    else:
        assert walk() == []
    os.close(fd)
    assert not top.exists()


def test_a_tree_deeper_than_the_walk_holds_is_removed(tmp_path: Path) -> None:
    top = tmp_path / "dir_6"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(safefs.MAX_DEPTH * 3 + 5):
        os.mkdir("d", dir_fd=fd)
        with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), "w") as fh:
            fh.write("x")
        sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = sub
    os.close(fd)
    parent = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert safefs.remove_dir_at(parent, "dir_6", str(top)) == []
    finally:
        os.close(parent)
    assert not top.exists()


def test_a_link_where_the_sandbox_was_is_unlinked_not_followed(
        tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("k")
    exe = tmp_path / "execute"
    exe.mkdir()
    (exe / "dir_7").symlink_to(target)
    problems = remove_sandbox(Sandbox(str(exe / "dir_7")))
    assert problems and "not a directory" in problems[0]
    assert (target / "keep").read_text() == "k" and not (exe / "dir_7").exists()


# --- through a real root daemon -----------------------------------------------------

def _job_ad(d: Daemon, cluster: int) -> str:
    with d.db() as db:
        rows = db.execute("SELECT ad FROM jobs WHERE cluster=? UNION ALL "
                          "SELECT ad FROM history WHERE cluster=?",
                          (cluster, cluster)).fetchall()
    return ad_of_text(rows[0][0]).to_new() if rows else ""


def _attr(ad: str, name: str) -> str | None:
    """One attribute's value as written in the queue's (new-format) ad."""
    m = re.search(rf"(?:^|[\[;]\s*){name}\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^;\]]+)", ad)
    return m.group(1).strip() if m else None


def _submit(u: User, d: Daemon, text: str, name: str = "j.sub") -> int:
    u.write(u.home / name, text)
    res = u.cli(["submit", name], env=d.env())
    assert res.rc == 0, res
    m = re.search(r"cluster (\d+)", res.stdout)
    assert m, res.stdout
    return int(m.group(1))


def _status(d: Daemon, cluster: int) -> int | None:
    return d.statuses().get(f"{cluster}.0")



def _answers(d: Daemon) -> float:
    """How long ``status`` and ``q`` took; a blocked daemon fails the call (30 s)."""
    t0 = time.monotonic()
    d.call("status")
    d.call("q")
    return time.monotonic() - t0


RACER = r"""#!/usr/bin/python3
# The job: a tree to remove, then a racer that outlives it (setsid, double fork) and
# keeps swapping each directory for a link to root's directory, whose file "inside"
# has the same name as the files in it: a path-based clean-up that follows the link
# (chmod of the parent, unlink of the child) hits root's directory.
import os, time
os.chdir(os.environ["_CONDOR_SCRATCH_DIR"])
for i in range(150):
    os.makedirs(f"t/d{i}/sub", exist_ok=True)
    for j in range(15):
        open(f"t/d{i}/inside{j}" if j else f"t/d{i}/inside", "w").close()
        open(f"t/d{i}/sub/inside{j}", "w").close()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open("PIDFILE", "w") as fh:
            fh.write(str(os.getpid()))
        end = time.monotonic() + 6
        while time.monotonic() < end:
            for i in range(150):
                try:
                    os.rename(f"t/d{i}", f"t/m{i}")
                    os.symlink("ROOTDIR", f"t/d{i}")
                    open(f"t/m{i}/inside", "w").close()
                    os.unlink(f"t/d{i}")
                    os.rename(f"t/m{i}", f"t/d{i}")
                except OSError:
                    pass
                # refill what is being emptied, so that removals fail and the
                # clean-up's error path runs while the links are in place
                for late in (f"t/d{i}/sub/late", f"top{i}", f"t/d{i}/late"):
                    try:
                        open(late, "w").close()
                    except OSError:
                        pass
                try:
                    os.symlink("ROOTFILE", f"t/l{i}")
                except OSError:
                    pass
    os._exit(0)
time.sleep(0.3)
"""


@pytest.mark.skipif(not ROOT, reason="needs a root daemon")
def test_an_escaped_job_racing_its_sandbox_removal_cannot_turn_root(
        open_base: Path, attacker: User, roots: dict[str, Path]) -> None:
    """Issue #30 case 2, end to end: the job leaves a racer behind that keeps renaming
    directories and planting links to root's file and directory while the root starter
    removes the sandbox. Root's file and directory are unchanged, EXECUTE keeps its
    mode, and the next job runs."""
    d = Daemon(open_base / "d")
    d.start()
    pidfile = attacker.home / "racer.pid"
    try:
        exe = d.state / "execute"
        exe_before = fingerprint(exe)
        before = _prints(roots)
        script = RACER.replace("ROOTDIR", str(roots["dir"])).replace(
            "ROOTFILE", str(roots["file"])).replace("PIDFILE", str(pidfile))
        attacker.write(attacker.home / "race.sh", script, 0o755)
        c1 = _submit(attacker, d, f"executable = {attacker.home}/race.sh\n"
                     "output = race.out\nerror = race.err\nqueue\n")
        wait_for(lambda: _status(d, c1) == 4, 60, d.output)
        # the racer goes on for its few seconds after the sandbox is gone
        wait_for(lambda: pidfile.exists(), 10, lambda: "the racer never started")
        racer = int(pidfile.read_text())
        wait_for(lambda: not os.path.exists(f"/proc/{racer}"), 20,
                 lambda: "the racer did not end")
        assert _prints(roots) == before and roots["inside"].exists()
        assert fingerprint(exe) == exe_before
        c2 = _submit(attacker, d, "executable = /bin/echo\narguments = next\n"
                     "output = next.out\nqueue\n", "n.sub")
        wait_for(lambda: _status(d, c2) == 4, 60, d.output)
        assert (attacker.home / "next.out").read_text() == "next\n"
        assert _prints(roots) == before
        assert fingerprint(exe) == exe_before
    finally:
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), 9)
            except (OSError, ValueError):
                pass
        d.stop()
        d.kill_leftovers()


@pytest.mark.skipif(not ROOT, reason="needs a root daemon")
def test_a_fifo_as_log_or_output_blocks_nothing(open_base: Path, attacker: User) -> None:
    """Issue #30 case 3: ``log = fifo.log`` and ``output = fifo``. The daemon keeps
    answering; the submit event is dropped with one warning naming the file and the
    job; each job is held naming the FIFO (22: the event log, 7: the output); no
    sandbox is left."""
    d = Daemon(open_base / "d")
    d.start()
    try:
        for name in ("fifo.log", "fifo"):
            attacker.run(["mkfifo", name])
        c1 = _submit(attacker, d, "executable = /bin/true\nlog = fifo.log\nqueue\n")
        print(f"status+q after a FIFO log submit: {_answers(d):.3f} s")
        c2 = _submit(attacker, d, "executable = /bin/echo\narguments = hi\n"
                     "output = fifo\nqueue\n", "o.sub")
        wait_for(lambda: _status(d, c1) == 5 and _status(d, c2) == 5, 60, d.output)
        print(f"status+q with both held: {_answers(d):.3f} s")
        ad1, ad2 = _job_ad(d, c1), _job_ad(d, c2)
        assert _attr(ad1, "HoldReasonCode") == "22", ad1
        assert "fifo.log" in ad1 and "it is a FIFO, not a regular file" in ad1
        assert _attr(ad2, "HoldReasonCode") == "7", ad2
        assert f"{attacker.home}/fifo" in ad2 and "it is a FIFO" in ad2
        out = (d.base / "daemon.out").read_text()
        warnings = [line for line in out.splitlines()
                    if "cannot write its log" in line and "fifo.log" in line]
        assert warnings and f"job {c1}.0" in warnings[0] and "FIFO" in warnings[0]
        no_sandbox_left(d)
        assert stat.S_ISFIFO(os.lstat(attacker.home / "fifo.log").st_mode)
    finally:
        d.stop()
        d.kill_leftovers()


@pytest.mark.skipif(not ROOT, reason="needs a root daemon")
def test_a_scratch_directory_left_in_an_old_queue_is_not_obeyed(
        open_base: Path, attacker: User) -> None:
    """Issue #30 case 1's /etc variant, from a queue written before submissions were
    checked (a submission naming it is refused now: test_submit_boundary). The job
    used to be restarted 3,052 times in 53 s; now the daemon hands its starter the ad
    without the attribute, so the job runs once in a sandbox of its own and /etc is
    untouched. (The starter's own refusal, code 14: test_starter_host.)"""
    d = Daemon(open_base / "d")
    d.start()
    try:
        etc_before = fingerprint(Path("/etc"))
        c1 = _submit(attacker, d, "executable = /usr/bin/env\noutput = where\nhold = true\n"
                     "queue\n")
        wait_for(lambda: _status(d, c1) == 5, 30, d.output)
        d.stop()
        # closed before the daemon starts: it holds the store alone (locking_mode)
        with contextlib.closing(sqlite3.connect(d.state / "spool" /
                                                "condorpy_queue.sqlite3")) as db, db:
            (ad,) = db.execute("SELECT ad FROM jobs WHERE cluster=?", (c1,)).fetchone()
            edited = ad_of_text(ad)
            edited["CondorpyPreparedScratch"] = "/etc"
            db.execute("UPDATE jobs SET ad=? WHERE cluster=?", (ad_text(edited), c1))
        d.start()
        assert "/etc" in (_attr(_job_ad(d, c1), "CondorpyPreparedScratch") or "")
        res = attacker.cli(["release", str(c1)], env=d.env())
        assert res.rc == 0, res
        wait_for(lambda: _status(d, c1) in (4, 5), 60, d.output)
        ad = _job_ad(d, c1)
        assert _status(d, c1) == 4, ad
        assert _attr(ad, "NumJobStarts") == "1", ad
        env = dict(line.split("=", 1) for line in
                   (attacker.home / "where").read_text().splitlines() if "=" in line)
        where = env["_CONDOR_SCRATCH_DIR"]
        assert where.startswith(str(d.state / "execute" / "dir_")), where
        assert fingerprint(Path("/etc")) == etc_before
        no_sandbox_left(d)
        d.call("status")
    finally:
        d.stop()
        d.kill_leftovers()


@pytest.mark.skipif(not ROOT, reason="needs a root daemon")
def test_a_starter_that_keeps_dying_holds_its_job(open_base: Path, attacker: User) -> None:
    """A starter that ends without a final ad requeues its job, up to
    CONDORPY_MAX_STARTER_FAILURES times; then the job is held, not restarted again."""
    d = Daemon(open_base / "d", "CONDORPY_MAX_STARTER_FAILURES = 2\n")
    d.start()
    try:
        attacker.write(attacker.home / "slow.sh", f"#!/bin/sh\necho $$ >> {attacker.home}/slow.pids\n"
                       "exec sleep 8\n", 0o755)
        c1 = _submit(attacker, d, f"executable = {attacker.home}/slow.sh\nqueue\n")
        for _ in (1, 2):
            wait_for(lambda: _status(d, c1) == 2 and _starter_pid(d, c1) is not None, 60,
                     d.output)
            pid = _starter_pid(d, c1)
            assert pid is not None
            os.kill(pid, 9)
            wait_for(lambda: _status(d, c1) != 2 or _starter_pid(d, c1) != pid, 60, d.output)
        wait_for(lambda: _status(d, c1) == 5, 30, d.output)
        ad = _job_ad(d, c1)
        assert _attr(ad, "HoldReasonCode") == "6"
        assert _attr(ad, "NumShadowExceptions") == "2"
        assert _attr(ad, "NumJobStarts") == "2"
        assert "starter failed 2 times" in ad
    finally:
        pids = attacker.home / "slow.pids"
        for line in (pids.read_text().split() if pids.exists() else []):
            try:
                os.kill(int(line), 9)
            except (OSError, ValueError):
                pass
        d.stop()
        d.kill_leftovers()


def _starter_pid(d: Daemon, cluster: int) -> int | None:
    with d.db() as db:
        row = db.execute("SELECT pid FROM starters WHERE cluster=?", (cluster,)).fetchone()
    return int(row[0]) if row else None
