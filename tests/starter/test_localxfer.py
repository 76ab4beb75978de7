"""The copy itself (condorpy.starter.localxfer.copy_as), in this process's own account:
what arrives where, what fails and how it is reported. The copies as other accounts
are end to end in tests/startd/test_local_transfer.py."""

from __future__ import annotations

import os
from pathlib import Path

from condorpy.starter.localxfer import copy_as
from condorpy.starter.transferlist import sources


def test_files_directories_and_contents_arrive_and_failures_are_reported(
        tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "d" / "sub").mkdir(parents=True)
    (src / "c").mkdir()
    (src / "f.txt").write_bytes(b"x" * 3_000_000)
    (src / "d" / "sub" / "g").write_text("g")
    (src / "c" / "h").write_text("h")
    (src / "prog").write_text("#!/bin/sh\n")
    (src / "prog").chmod(0o600)
    os.mkfifo(src / "fifo")
    dst.mkdir()
    (dst / "blocked").mkdir()           # a directory where a file should go
    os.mkfifo(dst / "fifo_out")
    names = ["f.txt", "d", "c/", "prog", "missing", "fifo"]
    result = copy_as(sources(names, str(src)), reader=None, writer=None,
                     dest=lambda n: str(dst / n), executable="prog")
    assert (dst / "f.txt").read_bytes() == b"x" * 3_000_000
    assert (dst / "d" / "sub" / "g").read_text() == "g"
    assert (dst / "h").read_text() == "h" and not (dst / "c").exists()
    assert (dst / "prog").stat().st_mode & 0o777 == 0o755
    assert ("d/sub/g" in result.copied) and ("f.txt" in result.copied)
    assert (str(src / "missing"), 2, False) in result.failures
    assert any(p == str(src / "fifo") and not w for p, _e, w in result.failures)
    # the writing side: a directory and a FIFO where files go, both refused at once
    (src / "blocked").write_text("b")
    (src / "fifo_out").write_text("o")
    result = copy_as(sources(["blocked", "fifo_out"], str(src)), reader=None,
                     writer=None, dest=lambda n: str(dst / n))
    assert [(p, w) for p, _e, w in result.failures] == \
        [(str(dst / "blocked"), True), (str(dst / "fifo_out"), True)]
