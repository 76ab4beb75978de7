"""The argparse conventions every ``condorpy`` command shares.

HTCondor's tools take ``-help`` (and ``-h``, ``--help``), print their usage and exit
0; argparse alone knows only ``-h``/``--help`` and reads ``-help`` as ``-h`` with an
argument. Every command builds its parser here, so that each answers all three, and
exposes it (``parser()`` or ``<name>_parser()``, see :func:`condorpy.cli.main.parser_for`)
for its ``--help`` and its manual page.
"""

from __future__ import annotations

import os
import sys
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
    kwargs.setdefault("formatter_class", _formatter())
    p = argparse.ArgumentParser(prog=prog, description=description, add_help=False,
                                **kwargs)
    add_help(p)
    return p


def wants_help(argv: Sequence[str]) -> bool:
    """Whether a command line that is not read by argparse asks for help."""
    return any(arg in HELP_FLAGS for arg in argv)


def _columns() -> int:
    """The terminal's width as help text is wrapped to it ($COLUMNS, else the terminal's,
    else 80), found without shutil: argparse's own formatter imports it, and with it
    the compression modules, into every command's start-up (a formatter is made for
    each option a parser is given)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns \
                if sys.__stdout__ is not None else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def _formatter() -> type[argparse.HelpFormatter]:
    import argparse

    class Formatter(argparse.HelpFormatter):
        def __init__(self, prog: str, indent_increment: int = 2,
                     max_help_position: int = 24, width: int | None = None) -> None:
            super().__init__(prog, indent_increment, max_help_position,
                             _columns() if width is None else width)
    return Formatter
