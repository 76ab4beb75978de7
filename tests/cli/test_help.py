"""Every command answers -help, --help and -h as HTCondor's tools do (condor_q -help
prints its usage and exits 0), and every option it defines says what it does."""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
from collections.abc import Iterator

import pytest

from condorpy.cli.main import COMMANDS, main, parser_for
from condorpy.queue.query import option_words


def _parsers(name: str, p: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """A command's parser and those of its subcommands (classad eval, policy explain)."""
    yield name, p
    for action in p._actions:  # argparse has no public walk of its tree
        if isinstance(action, argparse._SubParsersAction):
            for sub, sp in action.choices.items():
                yield from _parsers(f"{name} {sub}", sp)


def _every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    return [pair for name in COMMANDS for pair in _parsers(name, parser_for(name))]


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("flag", ["-help", "--help", "-h"])
@pytest.mark.parametrize("name", [n for n, _ in _every_parser()])
def test_help_prints_usage_and_exits_0(name: str, flag: str) -> None:
    rc, out, err = _run(*name.split(), flag)
    assert (rc, err) == (0, ""), (rc, err)
    assert out.startswith(f"usage: condorpy {name}"), out
    assert "show this help and exit" in out


@pytest.mark.parametrize("name", [n for n, _ in _every_parser()])
def test_every_option_has_a_help_text(name: str) -> None:
    p = dict(_every_parser())[name]
    bare = [a.option_strings or [a.dest] for a in p._actions
            if a.help is None or not a.help.strip()]
    assert bare == [], f"condorpy {name}: options without help: {bare}"
    assert p.description, f"condorpy {name} has no description"


def test_every_command_has_a_parser() -> None:
    # a new command must give its help too: parser_for finds it by its entry point
    assert {n.split()[0] for n, _ in _every_parser()} == set(COMMANDS)


@pytest.mark.parametrize("command", ["q", "history"])
def test_q_and_history_help_lists_every_option_they_take(command: str) -> None:
    # their arguments are read by queue/query.py, not argparse: the parser that
    # describes them must list each option query.py takes, and no other
    p = parser_for(command)
    listed = {s.lstrip("-") for a in p._actions for s in a.option_strings
              if s.startswith("-") and not s.startswith("--")}
    listed -= {"h", "help", "config"}
    assert listed == set(option_words(command))


def test_help_anywhere_on_the_line_and_from_a_shell() -> None:
    # condor_q -nobatch -help is help too; and the installed entry point exits 0
    rc, out, _ = _run("q", "-nobatch", "-help")
    assert rc == 0 and out.startswith("usage: condorpy q")
    res = subprocess.run([sys.executable, "-m", "condorpy", "config-val", "-help"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "ignored explicit argument" not in res.stderr
    assert res.stdout.startswith("usage: condorpy config-val")
