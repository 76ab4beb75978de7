"""condor_submit's checks before anything is queued (issue 23, item 5): lines nothing
reads are warned about, with the command they were probably meant to be (condor_submit
23.9.6: "the line 'requst_memory = 100' was unused by condor_submit. Is it a typo?");
unbalanced quotes, sizes that are not sizes and executables that cannot run are errors
naming the file and the line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from condorpy.errors import SubmitError
from condorpy.queue.submit import LocalFS, parse_submit, read_description
from condorpy.queue.submit_checks import (KNOWN_COMMANDS, SubmitWarning,
                                          check_executables, unused_lines)


def warnings(text: str) -> list[SubmitWarning]:
    return unused_lines(read_description(text, "job.sub"))


def submit(text: str, submit_dir: str = "/home/alice") -> list:  # type: ignore[type-arg]
    return parse_submit(text, "job.sub", cluster_id=1, owner="alice",
                        submit_dir=submit_dir, qdate=0, env={})


def test_a_typo_is_warned_with_the_command_it_was_meant_to_be() -> None:
    (w,) = warnings("executable = /bin/true\nrequst_memory = 100\nqueue\n")
    assert (w.file, w.line, w.key, w.value, w.suggestion) == \
        ("job.sub", 2, "requst_memory", "100", "request_memory")
    text = str(w)
    assert "job.sub, line 2" in text and "'requst_memory = 100'" in text
    assert "typo of request_memory" in text and "submitted" in text


def test_a_typo_still_queues_the_job_without_it() -> None:
    (ad,) = submit("executable = /bin/true\nrequst_memory = 100\nqueue\n")
    assert ad["RequestMemory"] == 128
    assert "Requst_memory" not in ad


def test_what_condor_submit_reads_is_no_typo() -> None:
    text = ("universe = vanilla\nexecutable = /bin/true\narguments = $(n)\nn = 3\n"
            "+Project = \"x\"\nMY.Weight = 2\nrequest_cpus = 1\nrequest_memory = 1G\n"
            "request_foo = 2\nrequire_gpus = Capability >= 8\naccounting_group = g\n"
            "docker_image = img\nmax_retries = 3\nINITIALDIR = /tmp\nRequestMemory = 64\n"
            "UserLog = l\nJobLeaseDuration = 60\nqueue\n")
    assert warnings(text) == []


def test_macros_count_as_used_only_when_a_used_line_expands_them() -> None:
    # as condor_submit does: 'macro' is read only by 'q', which nothing reads
    ws = warnings("executable = $(prog)\nprog = /bin/true\nq = $(macro)\nmacro = 3\n"
                  "deep = $(deeper)\ndeeper = x\narguments = $Fn(deep) $INT(num)\n"
                  "num = 4\nfoo = bar\nqueue\n")
    assert [(w.line, w.key) for w in ws] == [(3, "q"), (4, "macro"), (9, "foo")]
    # a queue statement reads its variables' macros too
    assert warnings("executable = /bin/true\nN = 2\nqueue $(N)\n") == []


def test_condor_submits_own_hints_and_near_standard_requests() -> None:
    got = {w.key: w.suggestion for w in warnings(
        "executable = /bin/true\nrequest_cpu = 1\nrequest_gpu = 1\nrequest_memroy = 9\n"
        "ouput = o\nzzzqqq = 1\nqueue\n")}
    assert got == {"request_cpu": "request_cpus", "request_gpu": "request_gpus",
                   "request_memroy": "request_memory", "ouput": "output", "zzzqqq": None}
    (ad,) = submit("executable = /bin/true\nrequest_gpu = 1\nqueue\n")
    assert "RequestGpu" not in ad    # not a custom resource named "gpu"


def test_known_commands_cover_condor_submits_common_ones() -> None:
    for cmd in ("executable", "should_transfer_files", "concurrency_limits",
                "job_max_vacate_time", "max_job_retirement_time", "getenv"):
        assert cmd in KNOWN_COMMANDS


@pytest.mark.parametrize("value,words", [
    ('"unterminated', "never closed"),
    ('"a" b', "after the closing double quote"),
    ('a "b', "not escaped"),
    ('"a \'b"', "single quote"),
])
def test_unbalanced_quotes_in_arguments_are_errors(value: str, words: str) -> None:
    with pytest.raises(SubmitError) as info:
        submit(f"executable = /bin/true\narguments = {value}\nqueue\n")
    assert (info.value.file, info.value.line) == ("job.sub", 2)
    assert words in str(info.value)


def test_balanced_quotes_are_fine() -> None:
    (ad,) = submit('executable = /bin/true\narguments = "a ""q"" \'b c\'"\nqueue\n')
    assert ad["Arguments"] == "a \"q\" b' 'c"
    (ad,) = submit('executable = /bin/true\narguments = a \\"b\nqueue\n')
    assert ad["Args"] == 'a "b'


def test_unterminated_environment_is_an_error() -> None:
    with pytest.raises(SubmitError) as info:
        submit('executable = /bin/true\nenvironment = "A=1 B=2\nqueue\n')
    assert info.value.line == 2 and "never closed" in str(info.value)


@pytest.mark.parametrize("line", ["request_memory = lots", "request_disk = 10 QB",
                                  'request_memory = "lots"', "request_disk = true",
                                  "request_memory = 10QB"])
def test_sizes_that_are_not_sizes_are_errors(line: str) -> None:
    with pytest.raises(SubmitError) as info:
        submit(f"executable = /bin/true\n\n{line}\nqueue\n")
    assert (info.value.file, info.value.line) == ("job.sub", 3)
    assert "unit" in str(info.value) or "not a size" in str(info.value)


@pytest.mark.parametrize("value", ["MemoryUsage * 2", "MemoryUsage",
                                   "ifThenElse(MemoryUsage =!= undefined, MemoryUsage, 64)",
                                   "TARGET.TotalSlotMemory", "RequestCpus * 512"])
def test_size_expressions_stay_expressions(value: str) -> None:
    (ad,) = submit(f"executable = /bin/true\nrequest_memory = {value}\nqueue\n")
    assert ad.lookup("RequestMemory") is not None


# --- the executable -------------------------------------------------------------

def check(tmp_path: Path, text: str) -> None:
    desc = read_description(text, "job.sub")
    ads = parse_submit(text, "job.sub", cluster_id=1, owner="alice",
                       submit_dir=str(tmp_path), qdate=0, env={})
    check_executables(desc, ads, LocalFS())


def test_a_missing_executable_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SubmitError) as info:
        check(tmp_path, "universe = vanilla\nexecutable = /bin/nonexistent\nqueue\n")
    assert (info.value.file, info.value.line) == ("job.sub", 2)
    assert "/bin/nonexistent does not exist" in str(info.value)
    with pytest.raises(SubmitError) as info:
        check(tmp_path, "executable = nothere.sh\nqueue\n")
    assert f"{tmp_path}/nothere.sh does not exist" in str(info.value)


def test_directories_empty_and_non_executable_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(SubmitError, match="is a directory"):
        check(tmp_path, f"executable = {tmp_path}\nqueue\n")
    (tmp_path / "empty.sh").write_text("")
    with pytest.raises(SubmitError, match="empty"):
        check(tmp_path, "executable = empty.sh\nqueue\n")
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)
    with pytest.raises(SubmitError, match="not executable"):
        check(tmp_path, "executable = job.sh\nqueue\n")
    # transferred, the starter makes it executable in the sandbox
    check(tmp_path, "executable = job.sh\nshould_transfer_files = YES\nqueue\n")
    script.chmod(0o755)
    check(tmp_path, "executable = job.sh\nqueue 2\n")


def test_match_time_executables_are_not_checked(tmp_path: Path) -> None:
    check(tmp_path, "executable = /opt/$$(Arch)/prog\nqueue\n")


def test_local_fs_kinds(tmp_path: Path) -> None:
    fs = LocalFS()
    exe = tmp_path / "x"
    exe.write_text("#!/bin/sh\n")
    os.chmod(exe, 0o700)
    assert [fs.kind(str(p)) for p in (exe, tmp_path, tmp_path / "none")] == \
        ["ok", "dir", "missing"]


def test_every_command_submit_reads_is_known() -> None:
    # a command added to submit.py without adding it here would be warned as a typo
    import ast
    import condorpy.queue.submit as submit_module
    tree = ast.parse(Path(submit_module.__file__).read_text())
    read = {arg.value.lower() for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "b"
            for arg in node.args
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str)}
    assert read and not {k for k in read if not warnings_free(k)}


def warnings_free(key: str) -> bool:
    return warnings(f"executable = /bin/true\n{key} = 1\nqueue\n") == []


# --- what a job's expressions cost (issue 25) -----------------------------------------

def _slot() -> "ClassAd":
    from condorpy.classad import ClassAd
    return ClassAd.parse_old('Memory = 4096\nCpus = 4\nArch = "X86_64"\nName = "slot1@h"')


def _still() -> float:
    return 0.0


def test_a_job_whose_expressions_double_through_references_is_refused_naming_them() -> None:
    from condorpy.queue.submit_checks import costly_expression
    chain = "".join(f"+A{i} = A{i - 1} + A{i - 1}\n" for i in range(1, 23))
    ads = submit("executable = /bin/true\n+A0 = 1\n" + chain +
                 "requirements = A22 > 0\nqueue 3\n")
    why = costly_expression(ads, _slot(), 1000, _still)
    assert why is not None
    assert why.startswith("job ad 0: its expressions exceed the evaluation budget (1000 "
                          "steps, 0.1 s per job ad: CONDORPY_EVAL_STEP_LIMIT) against this "
                          "machine's slot; it ran out in A")
    # the same job with fewer levels fits, its Requirements included
    small = submit("executable = /bin/true\n+A0 = 1\n+A1 = A0 + A0\n+A2 = A1 + A1\n"
                   "requirements = A2 > 0 && TARGET.Memory > 100\nqueue 3\n")
    assert costly_expression(small, _slot(), 1000, _still) is None


def test_a_catastrophic_regexp_in_the_requirements_is_refused() -> None:
    from condorpy.queue.submit_checks import costly_expression
    ads = submit('executable = /bin/true\nrequirements = regexp("(a|aa)+$", '
                 'strcat("' + "a" * 40 + '", TARGET.Name, "!"))\nqueue\n')
    why = costly_expression(ads, _slot(), 250_000, __import__("time").monotonic)
    assert why is not None and "it ran out in Requirements = (regexp(\"(a|aa)+$\"" in why


def test_only_the_proc_that_differs_is_refused_and_ordinary_jobs_pass() -> None:
    from condorpy.queue.submit_checks import costly_expression
    ok = submit("executable = /bin/true\nrequest_memory = 100\nrank = TARGET.Memory\n"
                "periodic_hold = time() - QDate > 3600\nqueue 500\n")
    assert costly_expression(ok, _slot(), 1000, _still) is None
    from condorpy.classad import ClassAd
    bad = ClassAd.parse_old("A0 = 1\n" + "".join(f"A{i} = A{i - 1} + A{i - 1}\n"
                                                 for i in range(1, 23)))
    why = costly_expression([*ok[:3], bad], _slot(), 1000, _still)
    assert why is not None and why.startswith("job ad 3: ")


def test_many_job_ads_each_of_its_own_shape_and_each_just_under_the_budget_are_refused(
        ) -> None:
    # each ad costs about 12300 steps (every attribute is evaluated: under 20000), each
    # its own expressions: together past the submission's budget (20000 + 2000 a job),
    # refused before all are checked
    from condorpy.classad import ClassAd
    from condorpy.queue.submit_checks import costly_expression

    def ad(i: int) -> ClassAd:
        return ClassAd.parse_old(f"A0 = 1\nA1 = A0 + A0 + {i} - {i}\n" + "".join(
            f"A{k} = A{k - 1} + A{k - 1}\n" for k in range(2, 13)) + f"Tag = {i} + A12")

    assert costly_expression([ad(0)], _slot(), 20_000, _still) is None
    why = costly_expression([ad(i) for i in range(50)], _slot(), 20_000, _still)
    assert why is not None and "the expressions of the submission's job ads exceed" in why
    assert not why.startswith("job ad 49:")
