"""Submit descriptions to job ads: the attributes condor_submit 25.x writes for a
vanilla job (facts from HTCondor's submit_utils.cpp), and SubmitError for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.classad import ClassAd, Undefined
from condorpy.errors import CondorpyError, SubmitError
from condorpy.queue.submit import LocalFS, parse_size, parse_submit


def submit(text: str | bytes, **kw: object) -> list[ClassAd]:
    args: dict[str, object] = dict(cluster_id=42, owner="alice", submit_dir="/home/alice",
                                   qdate=1_700_000_000, env={"PATH": "/usr/bin",
                                                             "HOME": "/home/alice",
                                                             "CONDOR_X": "1"})
    args.update(kw)
    return parse_submit(text, "job.sub", **args)  # type: ignore[arg-type]


def one(text: str, **kw: object) -> ClassAd:
    (ad,) = submit(text, **kw)
    return ad


def error_of(text: str | bytes, **kw: object) -> SubmitError:
    with pytest.raises(SubmitError) as info:
        submit(text, **kw)
    assert info.value.file == "job.sub"
    return info.value


def test_minimal_job_has_htcondor_defaults() -> None:
    ad = one("executable = run.sh\nqueue\n")
    assert ad["ClusterId"] == 42 and ad["ProcId"] == 0
    assert ad["Cmd"] == "/home/alice/run.sh"
    assert ad["Iwd"] == "/home/alice"
    assert ad["JobUniverse"] == 5
    assert ad["JobStatus"] == 1
    assert ad["QDate"] == ad["EnteredCurrentStatus"] == 1_700_000_000
    assert ad["Owner"] == "alice" and ad["User"] == "alice@localhost"
    assert ad["In"] == ad["Out"] == ad["Err"] == "/dev/null"
    assert ad["TransferIn"] is False
    assert ad["Args"] == ""
    assert "UserLog" not in ad
    assert ad["RequestCpus"] == 1
    assert ad["RequestMemory"] == 128           # JOB_DEFAULT_REQUESTMEMORY
    assert str(ad.lookup("RequestDisk")) == \
        "MAX({ 1024,(TransferInputSizeMB + 1) * 1.25 }) * 1024"
    assert ad["JobPrio"] == 0 and ad["JobNotification"] == 0
    assert ad["Rank"] == 0.0
    assert ad["PeriodicHold"] is False and ad["PeriodicRemove"] is False
    assert ad["PeriodicRelease"] is False
    assert ad["OnExitHold"] is False and ad["OnExitRemove"] is True
    assert ad["LeaveJobInQueue"] is False
    assert ad["NumJobStarts"] == 0 and ad["NumRestarts"] == 0
    assert ad["ShouldTransferFiles"] == "IF_NEEDED"
    assert ad["WhenToTransferOutput"] == "ON_EXIT"
    assert str(ad.lookup("Requirements")) == (
        '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && '
        '(versionGE(split(TARGET.CondorVersion)[1],"25.12.0") || '
        '(TARGET.Disk >= RequestDisk)) && (TARGET.Memory >= RequestMemory) && '
        '((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))')


def test_requirements_clauses_follow_requests_and_references() -> None:
    ad = one("executable = /bin/x\nrequest_cpus = 4\nrequest_gpus = 2\n"
             "requirements = (TARGET.Arch == \"aarch64\") && Disk > 5\n"
             "should_transfer_files = YES\nqueue\n")
    req = str(ad.lookup("Requirements"))
    assert req.startswith('((TARGET.Arch == "aarch64") && Disk > 5) && '
                          '(TARGET.OpSys == "LINUX")')
    assert "TARGET.Arch == \"X86_64\"" not in req      # the user already chose one
    assert "TARGET.Disk >= RequestDisk" not in req      # the user refers to Disk
    assert "(TARGET.Cpus >= RequestCpus)" in req
    assert "(TARGET.GPUs >= RequestGPUs)" in req
    assert req.endswith("(TARGET.HasFileTransfer)")
    assert ad["RequestGPUs"] == 2

    no_xfer = str(one("executable = /bin/x\nshould_transfer_files = NO\nqueue\n")
                  .lookup("Requirements"))
    assert no_xfer.endswith("(TARGET.FileSystemDomain == MY.FileSystemDomain)")
    # request_memory of 1 or less adds no Memory clause
    tiny = str(one("executable = /bin/x\nrequest_memory = 1\nqueue\n")
               .lookup("Requirements"))
    assert "TARGET.Memory" not in tiny


def test_forced_requirements_replace_generation() -> None:
    ad = one("executable = /bin/x\n+Requirements = TARGET.Foo\nqueue\n")
    assert str(ad.lookup("Requirements")) == "TARGET.Foo"


@pytest.mark.parametrize("text,mb", [("1GB", 1024), ("512M", 512), ("2 GB", 2048),
                                     ("100", 100), ("1.5G", 1536), ("3000k", 3),
                                     ("1T", 1 << 20), ("2gb", 2048)])
def test_request_memory_units(text: str, mb: int) -> None:
    assert one(f"executable = /bin/x\nrequest_memory = {text}\nqueue\n")["RequestMemory"] \
        == mb


@pytest.mark.parametrize("text,kb", [("1GB", 1 << 20), ("512M", 512 * 1024), ("100", 100),
                                     ("10 K", 10), ("1000b", 1000)])
def test_request_disk_units_default_kilobytes(text: str, kb: int) -> None:
    if text.endswith("b") and not text[:-1].strip()[-1:].isalpha():
        # "1000b" is not a unit: condor_submit keeps only K/M/G/T
        err = error_of(f"executable = /bin/x\nrequest_disk = {text}\nqueue\n")
        assert err.line == 2
        return
    assert one(f"executable = /bin/x\nrequest_disk = {text}\nqueue\n")["RequestDisk"] == kb


def test_parse_size_rounds_up() -> None:
    assert parse_size("1", 1 << 20) == 1
    assert parse_size("1K", 1 << 20) == 1
    assert parse_size("1025K", 1 << 20) == 2
    assert parse_size("abc", 1024) is None


def test_request_as_expression_kept() -> None:
    ad = one("executable = /bin/x\nrequest_memory = MemoryUsage * 2\nrequest_cpus = "
             "ifThenElse(X, 2, 1)\nqueue\n")
    assert str(ad.lookup("RequestMemory")) == "MemoryUsage * 2"
    assert str(ad.lookup("RequestCpus")) == "ifThenElse(X,2,1)"
    req = str(ad.lookup("Requirements"))
    assert "(TARGET.Memory >= RequestMemory)" in req
    assert "(TARGET.Cpus >= RequestCpus)" in req


def test_arguments_v1_and_v2() -> None:
    assert one("executable = /bin/x\narguments = a  b   c\nqueue\n")["Args"] == "a b c"
    v2 = one("executable = /bin/x\narguments = \"a 'b c' \"\"q\"\"\"\nqueue\n")
    assert v2["Arguments"] == "a b' 'c \"q\""
    assert "Args" not in v2


def test_environment_v1_v2_env_and_getenv() -> None:
    v2 = one('executable = /bin/x\nenvironment = "B=2 A=\'x y\'"\nqueue\n')
    assert v2["Environment"] == "A=x' 'y B=2"
    v1 = one("executable = /bin/x\nenvironment = B=2;A=1\nqueue\n")
    assert v1["Environment"] == "A=1 B=2"        # environment keyword: V2 attribute
    env1 = one("executable = /bin/x\nenv = B=2;A=1\nqueue\n")
    assert env1["Env"] == "A=1;B=2" and env1["EnvDelim"] == ";"
    assert "Environment" not in env1
    full = one("executable = /bin/x\ngetenv = true\nenvironment = \"HOME=/x\"\nqueue\n")
    assert full["Environment"] == "CONDOR_X=1 HOME=/x PATH=/usr/bin"
    some = one("executable = /bin/x\ngetenv = PATH, CONDOR_*\nqueue\n")
    assert some["Environment"] == "CONDOR_X=1 PATH=/usr/bin"
    excl = one("executable = /bin/x\ngetenv = *, !PATH\nqueue\n")
    assert excl["Environment"] == "CONDOR_X=1 HOME=/home/alice"
    assert "Environment" not in one("executable = /bin/x\ngetenv = false\nqueue\n")


def test_paths_streams_log_and_initialdir() -> None:
    ad = one("initialdir = run1\nexecutable = ../bin/x\ninput = in.txt\n"
             "output = out.$(Process)\nerror = /abs/err\nlog = job.log\nqueue\n")
    assert ad["Iwd"] == "/home/alice/run1"
    assert ad["Cmd"] == "/home/alice/bin/x"
    assert ad["In"] == "in.txt"            # kept relative to Iwd, as condor_submit does
    assert ad["Out"] == "out.0"
    assert ad["Err"] == "/abs/err"
    assert ad["UserLog"] == "/home/alice/run1/job.log"
    assert "TransferIn" not in ad


def test_custom_attributes_policy_and_misc() -> None:
    ad = one("executable = /bin/x\n+Project = \"demo\"\nMY.Weight = 3 + 4\n"
             "priority = 10\nrank = Memory\nnotification = Complete\n"
             "periodic_hold = NumJobStarts > 3\nperiodic_remove = JobStatus == 5\n"
             "on_exit_remove = ExitCode == 0\non_exit_hold = ExitCode =!= 0\n"
             "when_to_transfer_output = ON_EXIT_OR_EVICT\nleave_in_queue = true\n"
             "request_foo = 2\nqueue\n")
    assert ad["Project"] == "demo"
    assert str(ad.lookup("Weight")) == "3 + 4"
    assert ad["JobPrio"] == 10
    assert str(ad.lookup("Rank")) == "Memory"
    assert ad["JobNotification"] == 2
    assert str(ad.lookup("PeriodicHold")) == "NumJobStarts > 3"
    assert str(ad.lookup("PeriodicRemove")) == "JobStatus == 5"
    assert str(ad.lookup("OnExitRemove")) == "ExitCode == 0"
    assert str(ad.lookup("OnExitHold")) == "ExitCode isnt 0"
    assert ad["WhenToTransferOutput"] == "ON_EXIT_OR_EVICT"
    assert ad["LeaveJobInQueue"] is True
    assert ad["Requestfoo"] == 2
    assert "(TARGET.foo >= Requestfoo)" in str(ad.lookup("Requirements"))


def test_hold_submits_held() -> None:
    ad = one("executable = /bin/x\nhold = true\nqueue\n")
    assert ad["JobStatus"] == 5 and ad["HoldReasonCode"] == 15


def test_macros_and_match_time_substitution() -> None:
    ads = submit("executable = /bin/x\nbase = run\nname = $(base)-$(Cluster).$(Process)\n"
                 "arguments = $(name) $(ClusterId) $(ProcId) $(Step) $$(Memory)\n"
                 "queue 2\n")
    assert [a["Args"] for a in ads] == ["run-42.0 42 0 0 $$(Memory)",
                                        "run-42.1 42 1 1 $$(Memory)"]


def test_queue_forms_number_procs_in_order(tmp_path: Path) -> None:
    (tmp_path / "rows.txt").write_text("a 1\nb 2\n")
    (tmp_path / "x1.dat").write_text("")
    (tmp_path / "x2.dat").write_text("")
    text = ("executable = /bin/x\narguments = $(Item) $(Row) $(Step)\nqueue 2 in (p, q)\n"
            "arguments = $(n) $(v)\nqueue n,v from rows.txt\n"
            "arguments = $(f)\nqueue f matching files *.dat\n"
            "arguments = $(n)\nqueue n from (\n  z\n)\n"
            "queue 0\n")
    ads = submit(text, submit_dir=str(tmp_path))
    assert [a["ProcId"] for a in ads] == list(range(9))
    assert [a["Args"] for a in ads] == ["p 0 0", "p 0 1", "q 1 0", "q 1 1", "a 1", "b 2",
                                        "x1.dat", "x2.dat", "z"]


def test_multiline_queue_in_and_continuations() -> None:
    ads = submit("executable = \\\n  /bin/x\n# comment\narguments = $(v)\n"
                 "queue v in (\n  one\n  two\n)\n")
    assert [a["Args"] for a in ads] == ["one", "two"]
    assert ads[0]["Cmd"] == "/bin/x"


def test_fs_interface_is_used_for_from_and_matching() -> None:
    class FakeFS:
        def read_bytes(self, path: str) -> bytes:
            assert path == "/sub/items"
            return b"k1\nk2\n"

        def glob(self, pattern: str) -> list[str]:
            assert pattern == "/sub/*.in"
            return ["/sub/b.in", "/sub/a.in"]

        def is_dir(self, path: str) -> bool:
            return False

    ads = parse_submit("executable = /bin/x\narguments = $(Item)\nqueue from items\n"
                       "queue matching *.in\n", "s", cluster_id=1, owner="u",
                       submit_dir="/sub", qdate=0, fs=FakeFS())
    assert [a["Args"] for a in ads] == ["k1", "k2", "a.in", "b.in"]
    assert isinstance(LocalFS().is_dir("/"), bool)


# --- bad submit files: SubmitError naming file and line ---------------------------

@pytest.mark.parametrize("text,line,words", [
    ("executable = /bin/x\nuniverse = vm\nqueue\n", 2, "not supported"),
    ("executable = /bin/x\nuniverse = bogus\nqueue\n", 2, "unknown universe"),
    ("executable = /bin/x\nrequest_memory = 10 XB\nqueue\n", 2, "unknown unit"),
    ("executable = /bin/x\nrequest_disk = 5 Q\nqueue\n", 2, "unknown unit"),
    ("executable = /bin/x\nqueue x in (\n a\n b\n", 2, "not closed"),
    ("arguments = a\nqueue\n", 2, "no executable"),
    ("executable = /bin/x\nqueue abc def\n", 2, "not a non-negative integer"),
    ("executable = /bin/x\nqueue -1\n", 2, "not a non-negative integer"),
    ("executable = /bin/x\nqueue 1.5\n", 2, "not a non-negative integer"),
    ("executable = /bin/x\nA = $(B)\nB = $(A)\narguments = $(A)\nqueue\n", 4,
     "macro loop"),
    ("executable = /bin/x\nrequirements = (Memory > \nqueue\n", 2, "not a ClassAd"),
    ("executable = /bin/x\n+Foo = [[\nqueue\n", 2, "not a ClassAd"),
    ("executable = /bin/x\nthis is not a command\nqueue\n", 2, "not a submit command"),
    ("executable = /bin/x\narguments = \"a 'b\"\nqueue\n", 2, "quote"),
    ("executable = /bin/x\nenvironment = \"A\"\nqueue\n", 2, "environment"),
    ("executable = /bin/x\nnotification = sometimes\nqueue\n", 2, "notification"),
    ("executable = /bin/x\nshould_transfer_files = MAYBE\nqueue\n", 2,
     "should_transfer_files"),
    ("executable = /bin/x\nqueue v from missing-file.txt\n", 2, "cannot read"),
    ("executable = /bin/x\narguments = $NOPE(x)\nqueue\n", 2, "not supported"),
])
def test_bad_submit_files(text: str, line: int, words: str) -> None:
    err = error_of(text, submit_dir="/nonexistent-dir")
    assert err.line == line, str(err)
    assert words in str(err)
    assert f"job.sub, line {line}" in str(err)


def test_non_utf8_and_no_queue() -> None:
    err = error_of(b"executable = /bin/x\narguments = \xff\xfe\nqueue\n")
    assert err.line == 2 and "UTF-8" in str(err)
    err = error_of("executable = /bin/x\n")
    assert "no queue statement" in str(err)
    assert isinstance(err, CondorpyError)


def test_undefined_macro_is_empty_and_default_used() -> None:
    ad = one("executable = /bin/x\narguments = a$(nothing)b $(nothing:dflt)\nqueue\n")
    assert ad["Args"] == "ab dflt"
    assert ad.evaluate("NoSuchAttr") is Undefined


def test_attributes_condor_submit_dry_run_writes_too() -> None:
    # checked against condor_submit -dry-run (tests/pool/test_submit_dryrun.py)
    ad = one('executable = /bin/echo\narguments = a b\\"c d\noutput = o\n'
             "job_max_vacate_time = 30\nqueue\n")
    assert ad["Args"] == 'a b"c d'            # V1 raw: the escape is undone
    assert ad["JobLeaseDuration"] == 2400 and ad["JobMaxVacateTime"] == 30
    assert ad["StreamOut"] is False and ad.lookup("StreamErr") is None
    assert one("executable = /bin/true\njob_lease_duration = 60\noutput = o\n"
               "stream_output = true\nqueue\n")["JobLeaseDuration"] == 60
    assert one("executable = /bin/true\noutput = o\nstream_output = true\nqueue\n")[
        "StreamOut"] is True
