"""A pool job's scratch directory (condorpy/startd/poolside/transfer.py), on a real file
system: when files travel, the job ad the starter runs, what goes back, the refusals."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.pool import filetransfer as ft
from condorpy.startd.poolside import transfer as pt


def ad(text: str) -> ClassAd:
    return ClassAd.parse_old(text)


BASE = ('TransferSocket = "<127.0.0.1:4000>"\nTransferKey = "1#abc"\n'
        'FileSystemDomain = "submit.example"\n')


@pytest.mark.parametrize("how,domain,want", [
    ("YES", "submit.example", True), ("IF_NEEDED", "ep.example", True),
    ("IF_NEEDED", "SUBMIT.example", False), ("NO", "ep.example", False)])
def test_when_files_travel(how: str, domain: str, want: bool) -> None:
    assert pt.wants_transfer(ad(BASE + f'ShouldTransferFiles = "{how}"'), domain) is want


def test_no_transfer_server_no_transfer() -> None:
    assert not pt.wants_transfer(ad('ShouldTransferFiles = "YES"'), "x")


def test_the_job_runs_on_its_transferred_copies(tmp_path: Path) -> None:
    job = ad(BASE + 'Cmd = "/home/alice/job.sh"\nIn = "/home/alice/in.txt"\n'
             'Out = "out.txt"\nErr = "out.txt"\nIwd = "/home/alice"')
    got = pt.job_ad_in_scratch(job, tmp_path)
    assert got["Iwd"] == str(tmp_path) and got["Cmd"] == "job.sh"
    assert got["In"] == "in.txt"
    assert got["Out"] == got["Err"] == ft.STDOUT_NAME       # one file when they match
    assert got["TransferOriginalOutput"] == "out.txt"
    assert got["CondorpyPreparedScratch"] == str(tmp_path)
    kept = pt.job_ad_in_scratch(ad('Cmd = "/bin/sh"\nTransferExecutable = false\n'
                                   'Err = "e"\nOut = "/dev/null"'), tmp_path)
    assert kept["Cmd"] == "/bin/sh" and kept["Out"] == "/dev/null"
    assert kept["Err"] == ft.STDERR_NAME


def _scratch(tmp_path: Path) -> pt.Scratch:
    box = pt.new_scratch(ad('Cmd = "job.sh"'), tmp_path, 1)
    for name, text in (("job.sh", "#!/bin/sh\n"), ("in.txt", "in"), (".job.ad", "x")):
        (box.path / name).write_text(text)
    (box.path / "indir").mkdir()
    box.catalog = pt.catalog(box.path)
    return box


def test_new_and_changed_top_level_files_go_back(tmp_path: Path) -> None:
    box = _scratch(tmp_path)
    time.sleep(0.01)
    (box.path / "in.txt").write_text("in")            # same size, newer: changed
    (box.path / "new.txt").write_text("new")
    (box.path / ft.STDOUT_NAME).write_text("o")
    (box.path / "newdir").mkdir()
    (box.path / "newdir" / "f").write_text("f")
    os.symlink("/etc/passwd", box.path / "link")
    items, failure = pt.output_items(ad(""), box)
    assert failure is None
    assert sorted(i.name for i in items) == [ft.STDOUT_NAME, "in.txt", "new.txt"]


def test_named_outputs_directories_and_a_missing_one(tmp_path: Path) -> None:
    box = _scratch(tmp_path)
    out = box.path / "results"
    (out / "deep").mkdir(parents=True)
    (out / "deep" / "a.txt").write_text("a")
    (out / "b.txt").write_text("bb")
    os.chmod(out / "b.txt", 0o600)
    items, failure = pt.output_items(ad('TransferOutput = "results, results/, gone.txt"'),
                                     box)
    names = [(i.name, i.directory) for i in items]
    assert names == [("results", True), ("results/b.txt", False),
                     ("results/deep", True), ("results/deep/a.txt", False),
                     ("b.txt", False), ("deep", True), ("deep/a.txt", False)]
    assert next(i for i in items if i.name == "results/b.txt").mode == 0o600
    assert failure is not None and failure.code == ft.UPLOAD_FILE_ERROR
    assert failure.subcode == 2 and "gone.txt" in failure.reason


def test_spooled_files_go_back_at_the_final_transfer_only(tmp_path: Path) -> None:
    box = _scratch(tmp_path)
    job = ad('SpooledOutputFiles = "in.txt"')
    assert [i.name for i in pt.output_items(job, box, final=True)[0]] == ["in.txt"]
    assert pt.output_items(job, box, final=False)[0] == []


def test_received_files_land_inside_with_their_modes(tmp_path: Path) -> None:
    sink = pt.DirSink(tmp_path, executable="job.sh")
    sink.mkdir("d", 0o750)
    for name, mode in (("d/f", 0o640), ("job.sh", 0o600)):
        h = sink.create(name, mode)
        h.write(b"x")
        sink.finish(name, h, mode)
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "d" / "f").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "job.sh").stat().st_mode & 0o777 == 0o755   # made executable
    os.symlink("/etc", tmp_path / "evil")
    with pytest.raises(OSError):
        sink.create("evil", 0o644)            # never through a link


@pytest.mark.parametrize("text", ['TransferOutputRemaps = "a = https://x.org/a"',
                                  'OutputDestination = "s3://bucket/"'])
def test_output_to_a_url_is_refused_as_without_a_plugin(text: str) -> None:
    why = pt.url_refusal(ad(text))
    assert why is not None and "plugin for type" in why and "not found" in why
    assert pt.url_refusal(ad('TransferOutputRemaps = "a = b.txt"')) is None


def test_a_transfer_server_behind_ccb_is_refused_in_one_line() -> None:
    from condorpy.errors import PoolError
    from condorpy.pool.shadow import SessionInfo
    job = ad('TransferSocket = "<10.0.0.9:9618?CCBID=10.0.0.1:9618%3faddrs%3d10.0.0.1-9618#7'
             '&PrivNet=site&sock=shadow_1_2>"\nTransferKey = "1#a"')
    with pytest.raises(PoolError, match="CCB broker"):
        pt.input_transfer(job, SessionInfo("filetrans.x", "", "k"),
                          pt.Scratch(Path("/nonexistent")), "25.14.1")
    # behind condor_shared_port alone it is reachable: the transfer is made
    job = ad('TransferSocket = "<127.0.0.1:9618?sock=shadow_1_2>"\nTransferKey = "1#a"')
    assert pt.input_transfer(job, SessionInfo("filetrans.x", "", "k"),
                             pt.Scratch(Path("/nonexistent")), "25.14.1") is not None
