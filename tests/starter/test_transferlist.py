"""The pure decisions of a job's file transfer (condorpy.starter.transferlist)."""

from __future__ import annotations

import pytest

from condorpy.starter.jobspec import JobSpec
from condorpy.starter.transferlist import (STDERR_NAME, STDOUT_NAME, LocalPlan, Source,
                                           When, changed_files, destination, input_failure,
                                           output_failure, parse_remaps, remapped, sources,
                                           transfer_list, transfer_wanted)


def test_lists_split_on_commas_and_white_space() -> None:
    assert transfer_list("a, b,,c  d/ ,") == ["a", "b", "c", "d/"]
    assert transfer_list("") == []


def test_remaps_with_escapes_and_blanks() -> None:
    assert parse_remaps("a = b; c=d/e ;;") == {"a": "b", "c": "d/e"}
    assert parse_remaps(r"x\;y = z\=w") == {"x;y": "z=w"}
    assert parse_remaps("no equals; =empty; k = ") == {}


def test_a_remapped_directory_carries_its_contents() -> None:
    remaps = {"out": "results", "f.txt": "/abs/g.txt"}
    assert remapped("out/a/b", remaps) == "results/a/b"
    assert remapped("f.txt", remaps) == "/abs/g.txt"
    assert remapped("other", remaps) == "other"
    streams = {STDOUT_NAME: "job.out"}
    assert destination(STDOUT_NAME, "/iwd", remaps, streams) == "/iwd/job.out"
    assert destination("f.txt", "/iwd", remaps, streams) == "/abs/g.txt"
    assert destination("out/x", "/iwd", remaps, streams) == "/iwd/results/x"


def test_sources_with_and_without_trailing_slash() -> None:
    assert sources(["d", "e/", "sub/f.txt", "/abs/x"], "/iwd") == [
        Source("/iwd/d", "d"), Source("/iwd/e", "", True), Source("/iwd/sub/f.txt", "f.txt"),
        Source("/abs/x", "x")]


def test_changed_files_are_new_or_different_unless_skipped() -> None:
    before = {"in": (1, 5), "same": (2, 2)}
    after = {"in": (3, 5), "same": (2, 2), "new": (4, 1), ".job.ad": (9, 9)}
    assert changed_files(before, after, skip={".job.ad"}) == ["in", "new"]
    assert changed_files(before, after, skip={".job.ad"}, always={"same"}) == \
        ["in", "new", "same"]


@pytest.mark.parametrize("how,same,wanted", [
    ("YES", True, True), ("YES", False, True), ("IF_NEEDED", True, False),
    ("IF_NEEDED", False, True), ("NO", False, False), ("", False, False)])
def test_when_a_local_job_transfers(how: str, same: bool, wanted: bool) -> None:
    assert transfer_wanted({"ShouldTransferFiles": how}, runs_as_submitter=same) is wanted


@pytest.mark.parametrize("when,exited,success,goes", [
    ("ON_EXIT", True, False, True), ("ON_EXIT", False, False, False),
    ("ON_SUCCESS", True, True, True), ("ON_SUCCESS", True, False, False),
    ("ON_EXIT_OR_EVICT", False, False, True), ("NEVER", True, True, False)])
def test_when_output_goes(when: str, exited: bool, success: bool, goes: bool) -> None:
    plan = LocalPlan.from_ad({"WhenToTransferOutput": when}, "/iwd")
    assert plan.output_goes(exited=exited, success=success) is goes


def _job(**kw: object) -> JobSpec:
    base: dict[str, object] = dict(
        job_id="1.0", cmd="/bin/prog", args=(), env=(), iwd="/iwd", stdin="in.dat",
        stdout="o", stderr="o", owner="u", kill_sig=15, kill_sig_timeout_s=None,
        user_log=None, cluster=1, proc=0)
    base.update(kw)
    return JobSpec(**base)  # type: ignore[arg-type]


def test_the_plan_sends_executable_and_stdin_and_maps_streams_back() -> None:
    ad = {"Cmd": "/bin/prog", "In": "in.dat", "Out": "o", "Err": "o",
          "TransferInput": "a,b/", "TransferOutputRemaps": "x = y",
          "WhenToTransferOutput": "on_exit_or_evict"}
    plan = LocalPlan.from_ad(ad, "/iwd")
    assert plan.inputs == ("a", "b/", "/bin/prog", "in.dat")
    assert plan.executable == "prog" and plan.when is When.ON_EXIT_OR_EVICT
    assert plan.outputs is None and dict(plan.remaps) == {"x": "y"}
    job = plan.job_in_scratch(_job(), "/scratch")
    assert (job.iwd, job.cmd, job.stdin, job.stdout, job.stderr) == \
        ("/scratch", "prog", "in.dat", STDOUT_NAME, STDOUT_NAME)
    assert plan.destination(STDOUT_NAME) == "/iwd/o"


def test_a_streamed_or_untransferred_file_stays_in_iwd() -> None:
    ad = {"Cmd": "/bin/prog", "TransferExecutable": False, "In": "in.dat",
          "TransferIn": False, "Out": "o", "StreamOut": True, "Err": "e",
          "TransferOutput": ""}
    plan = LocalPlan.from_ad(ad, "/iwd")
    assert plan.inputs == () and plan.outputs == ()
    job = plan.job_in_scratch(_job(stderr="e"), "/scratch")
    assert (job.cmd, job.stdin, job.stdout, job.stderr) == \
        ("/bin/prog", "/iwd/in.dat", "/iwd/o", STDERR_NAME)


def test_named_outputs_and_changed_ones() -> None:
    plan = LocalPlan.from_ad({"Cmd": "/bin/prog", "Out": "o", "TransferOutput": "d, e/"},
                             "/iwd")
    after = {STDOUT_NAME: (1, 1), "x": (1, 1)}
    assert plan.output_sources("/s", {}, after) == [
        Source("/s/d", "d"), Source("/s/e", "", True), Source(f"/s/{STDOUT_NAME}",
                                                              STDOUT_NAME)]
    plan = LocalPlan.from_ad({"Cmd": "/bin/prog"}, "/iwd")
    after = {"prog": (1, 1), "x": (1, 1), "kept": (2, 2)}
    assert [s.name for s in plan.output_sources("/s", {"kept": (2, 2)}, after)] == ["x"]
    assert [s.name for s in plan.output_sources("/s", {"kept": (2, 2)}, after,
                                                spooled=frozenset({"kept"}))] == \
        ["kept", "x"]
    assert [s.name for s in plan.output_sources("/s", {"kept": (2, 2)}, after,
                                                spooled=frozenset({"kept"}),
                                                final=False)] == ["x"]


def test_hold_reasons_in_htcondors_words() -> None:
    f = input_failure("/iwd/nope", 2, access_point="ap", slot="slot1@ep")
    assert (f.code, f.subcode) == (13, 2)
    assert f.reason == ("Transfer input files failure at access point ap while sending "
                        "files to execution point slot1@ep. Details: reading from file "
                        "/iwd/nope: (errno 2) No such file or directory")
    f = output_failure("/s/missing", 2, access_point="ap", slot="slot1@ep")
    assert (f.code, f.subcode) == (12, 2)
    assert f.reason.startswith("Transfer output files failure at execution point slot1@ep "
                               "while sending files to access point ap. Details: reading "
                               "from /s/missing: (errno 2)")
    f = output_failure("/iwd/x", 13, access_point="ap", slot="slot1@ep", writing=True)
    assert "at access point ap while receiving files from execution point slot1@ep" \
        in f.reason and "writing to file /iwd/x: (errno 13) Permission denied" in f.reason
