"""condor_qedit's command line as `condorpy qedit` reads it (condorpy/cli/qedit_cmd.py):
ids, one owner or options first, then the edits, a value taken whole even when it
begins with '-' or holds '='."""

from __future__ import annotations

import pytest

from condorpy.cli.qedit_cmd import UsageError, main, read_line
from condorpy.errors import QueueError
from condorpy.queue.edit import split_edits


def test_ids_then_pairs_and_words() -> None:
    line = read_line(["1", "2.3", "Foo", "-1", "Bar=Memory >= 10", "Req", "a==b"])
    assert (line.ids, line.owners) == (["1", "2.3"], [])
    assert split_edits(line.words) == [("Foo", "-1"), ("Bar", "Memory >= 10"),
                                       ("Req", "a==b")]


def test_an_owner_and_the_options() -> None:
    line = read_line(["alice", "JobPrio", "5"])
    assert (line.owners, split_edits(line.words)) == (["alice"], [("JobPrio", "5")])
    line = read_line(["-constraint", "JobPrio > 1", "-owner", "bob", "-jobids", "3.0,4",
                      "-dry-run", "-config", "/c", "X", "1"])
    assert (line.constraint, line.owners, line.ids) == (["JobPrio > 1"], ["bob"],
                                                       ["3.0", "4"])
    assert (line.dry_run, line.config, line.words) == (True, "/c", ["X", "1"])
    # after a restriction option a bare word is an edit, not an owner
    assert read_line(["-constraint", "true", "alice", "1"]).words == ["alice", "1"]


def test_errors() -> None:
    with pytest.raises(UsageError, match="-bogus is not a valid option"):
        read_line(["1.0", "-bogus"])
    with pytest.raises(UsageError, match="requires an argument"):
        read_line(["-constraint"])
    with pytest.raises(QueueError, match="expression required after attribute Foo"):
        split_edits(read_line(["1.0", "Foo"]).words)


@pytest.mark.parametrize("argv, err", [
    (["1.0", "Owner", '"x"'], 'Update of immutable attribute "Owner" is not allowed.\n'
                              "Transaction failed.  No attributes were set.\n"),
    (["1.0", "TotalSubmitProcs", "3"], 'Update of secure attribute "TotalSubmitProcs" is '
                                       "not allowed.\n"),
    (["1.0", "a-b", "3"], 'Update aborted, illegal attribute-name specified for attribute '
                          '"a-b".\n'),
    (["1.0", "Foo", "(1"], "Update aborted, illegal value for : Foo\n"),
])
def test_refused_before_the_daemon_is_asked(argv: list[str], err: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # no daemon runs: these are condor_qedit's own checks, made before it connects
    assert main(["-config", "/dev/null", *argv]) == 1
    assert capsys.readouterr().err.startswith(err)


def test_edits_from_a_file(tmp_path: object) -> None:
    from pathlib import Path
    from condorpy.cli.qedit_cmd import read_edits
    base = Path(str(tmp_path))
    (base / "long").write_text('Foo = "bar"\nPrio = JobPrio + 1\n')
    (base / "new").write_text('[ Foo = 2; Req = Memory > 10 ]')
    assert read_edits("auto", str(base / "long")) == [("Foo", '"bar"'),
                                                      ("Prio", "JobPrio + 1")]
    assert read_edits("auto", str(base / "new")) == [("Foo", "2"), ("Req", "Memory > 10")]
    assert read_line(["1", "-edits:new", "f"]).edit_files == [("new", "f")]
    with pytest.raises(UsageError, match="Can't open file of edits"):
        read_edits("auto", str(base / "missing"))
