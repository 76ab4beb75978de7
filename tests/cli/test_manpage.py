"""The manual pages are made from the commands' own argparse definitions
(condorpy/cli/manpage.py), as the Debian package builds them."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest

from condorpy.cli.main import COMMANDS
from condorpy.cli.manpage import command, command_page, main_page, write_pages


def test_a_page_for_condorpy_and_for_every_command(tmp_path: Path) -> None:
    written = write_pages(tmp_path)
    assert {p.name for p in written} == {"condorpy.1"} | \
        {f"condorpy-{name}.1" for name in COMMANDS}
    top = (tmp_path / "condorpy.1").read_text()
    for name in COMMANDS:
        assert f"\\fBcondorpy\\-{name.replace('-', chr(92) + '-')}\\fR(1)" in top


def test_options_and_their_help_come_from_the_parser() -> None:
    page = command_page(command("startd"))
    assert page.startswith(".TH CONDORPY-STARTD 1 ")
    assert "\\fB\\-fresh\\-queue\\fR" in page
    assert "move it aside as condorpy_queue.sqlite3.bad\\-<time>" in page
    assert "condorpy startd [\\-h] [\\-config FILE]" in page


def test_sub_commands_get_sections_of_their_own() -> None:
    page = command_page(command("policy"))
    assert ".SH POLICY SIMULATE" in page and ".SH POLICY EXPLAIN" in page
    assert "\\fB\\-\\-timeline\\fR \\fITIMELINE\\fR" in page


def test_the_help_printer_is_put_back() -> None:
    saved = argparse.ArgumentParser.print_help
    command("submit")
    assert argparse.ArgumentParser.print_help is saved


def test_the_date_is_source_date_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert '"2023-11-14" "condorpy ' in main_page(["q"])


def test_lines_that_roff_would_take_for_requests_are_escaped() -> None:
    import argparse
    from condorpy.cli.manpage import Command, parts_of
    p = argparse.ArgumentParser(prog="condorpy x",
                                description=".TH not a request\n\n'quote")
    page = command_page(Command("x", "a tool", parts_of(p)))
    assert "\n\\&.TH not a request\n" in page and "\n\\&'quote\n" in page


@pytest.mark.skipif(shutil.which("man") is None, reason="needs man(1) to check the pages")
def test_man_reads_every_page_without_a_warning(tmp_path: Path) -> None:
    for page in write_pages(tmp_path):
        res = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True,
                             text=True, env={"LC_ALL": "C.UTF-8", "MANWIDTH": "80",
                                             "PATH": "/usr/bin:/bin"}, timeout=60)
        assert res.returncode == 0 and not res.stderr.strip(), (page.name, res.stderr)
        assert "NAME" in res.stdout
