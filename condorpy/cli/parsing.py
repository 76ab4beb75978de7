"""The argparse conventions every ``condorpy`` command shares.

HTCondor's tools take ``-help`` (and ``-h``, ``--help``), print their usage and exit
0; argparse alone knows only ``-h``/``--help`` and reads ``-help`` as ``-h`` with an
argument. Every command builds its parser here, so that each answers all three, and
exposes it (``parser()`` or ``<name>_parser()``, see :func:`condorpy.cli.main.parser_for`)
for its ``--help`` and its manual page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import argparse

HELP_FLAGS = ("-h", "-help", "--help")


def add_help(p: argparse.ArgumentParser) -> None:
    import argparse  # (here: q, history and who read their own arguments, without it)
    p.add_argument(*HELP_FLAGS, action="help", default=argparse.SUPPRESS,
                   help="show this help and exit")


def tool_parser(prog: str, description: str | None = None,
                **kwargs: Any) -> argparse.ArgumentParser:
    """An ArgumentParser that answers -h, -help and --help."""
    import argparse
    p = argparse.ArgumentParser(prog=prog, description=description, add_help=False,
                                **kwargs)
    add_help(p)
    return p


def wants_help(argv: Sequence[str]) -> bool:
    """Whether a command line that is not read by argparse asks for help."""
    return any(arg in HELP_FLAGS for arg in argv)
