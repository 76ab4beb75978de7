"""Manual pages from the commands' own argparse definitions, so that what ``man
condorpy-submit`` says is what ``condorpy submit --help`` says.

    python3 -m condorpy.cli.manpage OUTDIR

writes ``condorpy.1`` (the commands, files and environment) and ``condorpy-<command>.1``
for each command of :data:`condorpy.cli.main.COMMANDS`. The Debian package makes them
at build time (packaging/debian/rules). A command's parser is had by running the command
with ``--help`` while argparse's ``print_help`` hands the parser back instead of
printing; its parts (usage, description, options, sub-commands) come from a help
formatter that records them rather than laying them out. A command that parses its own
arguments gets its ``--help`` text as it prints it, or, if it has none, its one line.
The date is SOURCE_DATE_EPOCH's, so that a rebuild makes the same pages.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from condorpy import __version__
from condorpy.cli.main import COMMANDS, parser_for

MANUAL = "condorpy manual"


class _Recorder(argparse.HelpFormatter):
    """A help formatter whose "help text" is the parser's parts as JSON: argparse calls
    a formatter with every section, option and text in turn, which is the public way
    to read a parser's definitions."""

    def __init__(self, prog: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(prog, *args, **kwargs)
        self.usage = ""
        self.texts: list[str] = []
        self.sections: list[dict[str, Any]] = []
        self.section: dict[str, Any] | None = None

    def add_usage(self, usage: str | None, actions: Iterable[argparse.Action],
                  groups: Iterable[Any], prefix: str | None = None) -> None:
        if usage is not argparse.SUPPRESS:
            self.usage = self._format_usage(usage, actions, groups, "").strip()

    def start_section(self, heading: str | None) -> None:
        self.section = {"heading": heading or "", "text": [], "items": []}
        self.sections.append(self.section)

    def end_section(self) -> None:
        self.section = None

    def add_text(self, text: str | None) -> None:
        if text and text is not argparse.SUPPRESS:
            text = text % {"prog": self._prog} if "%(prog)" in text else text
            (self.section["text"] if self.section is not None else self.texts).append(text)

    def add_argument(self, action: argparse.Action) -> None:
        if action.help is argparse.SUPPRESS or self.section is None:
            return
        item: dict[str, Any] = {
            "invocation": self._format_action_invocation(action),
            "help": self._expand_help(action) if action.help else "",
            "commands": []}
        if isinstance(action.choices, dict):
            for sub in self._iter_indented_subactions(action):
                name = sub.dest
                parser = action.choices.get(name)
                item["commands"].append({
                    "name": name, "help": sub.help or "",
                    "parts": parts_of(parser) if isinstance(parser, argparse.ArgumentParser)
                    else None})
        self.section["items"].append(item)

    def format_help(self) -> str:
        return json.dumps({"usage": self.usage, "texts": self.texts,
                           "sections": self.sections})


def parts_of(parser: argparse.ArgumentParser) -> dict[str, Any]:
    parser.formatter_class = _Recorder
    parts: dict[str, Any] = json.loads(parser.format_help())
    return parts


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    parts: dict[str, Any]            # from the command's argparse parser


def command(name: str) -> Command:
    """One command's definitions, from the same argparse parser its -help prints."""
    return Command(name, COMMANDS[name][1], parts_of(parser_for(name)))


# --- roff -------------------------------------------------------------------------------

def _esc(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line
                     for line in text.split("\n"))


def _paragraphs(text: str) -> list[str]:
    """Text as roff paragraphs: lines joined and filled, indented lines kept as they are."""
    out: list[str] = []
    for block in text.strip("\n").split("\n\n"):
        if out:
            out.append(".PP")
        lines = block.split("\n")
        if any(line.startswith((" ", "\t")) for line in lines[1:]):
            out.append(".nf\n" + _esc(block) + "\n.fi")
        else:
            out.append(_esc(" ".join(line.strip() for line in lines if line.strip())))
    return out


def _invocation(text: str) -> str:
    """``-c FILE, --config FILE`` with the options bold and the values italic."""
    pieces = []
    for alternative in text.split(", "):
        words = alternative.split(" ")
        bits = [f"\\fB{_esc(words[0])}\\fR"] + [f"\\fI{_esc(w)}\\fR" for w in words[1:]]
        pieces.append(" ".join(bits))
    return ", ".join(pieces)


def _options(parts: dict[str, Any], level: str) -> list[str]:
    lines: list[str] = []
    for section in parts["sections"]:
        if not section["items"] and not section["text"]:
            continue
        heading = section["heading"].upper() if level == ".SH" else section["heading"]
        lines.append(f"{level} {_esc(heading)}")
        for text in section["text"]:
            lines += [".PP", *_paragraphs(text)]
        for item in section["items"]:
            if not item["commands"]:     # sub-commands are listed by name alone
                lines += [".TP", _invocation(item["invocation"])]
                lines += _paragraphs(item["help"]) if item["help"] else [""]
            for sub in item["commands"]:
                lines += [".TP", f"\\fB{_esc(sub['name'])}\\fR",
                          *(_paragraphs(sub["help"]) or [""])]
    return lines


def _date() -> str:
    stamp = os.environ.get("SOURCE_DATE_EPOCH")
    return time.strftime("%Y-%m-%d", time.gmtime(int(stamp) if stamp else None))


def _header(title: str, summary: str) -> list[str]:
    return [f'.TH {title.upper()} 1 "{_date()}" "condorpy {__version__}" "{MANUAL}"',
            # no hyphenation: option and page names are to be typed as they read
            ".nh", ".ad l", ".SH NAME", f"{_esc(title)} \\- {_esc(summary)}"]


def command_page(cmd: Command) -> str:
    page = _header(f"condorpy-{cmd.name}", cmd.summary)
    parts = cmd.parts
    page += [".SH SYNOPSIS", ".nf",
             _esc(parts["usage"] if parts and parts["usage"] else
                  f"condorpy {cmd.name} [OPTIONS ...]"), ".fi",
             ".SH DESCRIPTION"]
    if parts:
        page += [p for text in parts["texts"] for p in (".PP", *_paragraphs(text))] \
            or [_esc(cmd.summary[:1].upper() + cmd.summary[1:]) + "."]
        page += _options(parts, ".SH")
        for section in parts["sections"]:
            for item in section["items"]:
                for sub in item["commands"]:
                    if not sub["parts"]:
                        continue
                    page += [f".SH {_esc(cmd.name.upper())} {_esc(sub['name'].upper())}",
                             ".nf", _esc(sub["parts"]["usage"]), ".fi"]
                    page += [p for text in sub["parts"]["texts"]
                             for p in (".PP", *_paragraphs(text))]
                    page += _options(sub["parts"], ".SS")
    else:
        page += [_esc(cmd.summary[:1].upper() + cmd.summary[1:]) + "."]
    page += [".SH SEE ALSO", "\\fBcondorpy\\fR(1)"]
    return "\n".join(page) + "\n"


def main_page(names: Iterable[str]) -> str:
    page = _header("condorpy", "an HTCondor execution point (startd and starter)")
    page += [".SH SYNOPSIS", "\\fBcondorpy\\fR \\fICOMMAND\\fR [\\fIARGS\\fR ...]",
             ".br", "\\fBcondorpy\\fR \\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR",
             ".SH DESCRIPTION",
             *_paragraphs(
                 "condorpy runs jobs on this machine as an HTCondor execution point does: "
                 "it reads condor_config files, cuts the machine into slots, decides by "
                 "the startd policy when jobs start, suspend, retire and are vacated, and "
                 "runs each job under a starter, in a cgroup of its own where the "
                 "machine has cgroup v2."),
             ".PP",
             "The daemon is \\fBcondorpy startd\\fR, run by the systemd service "
             "condorpy.service; the other commands are the condor_* tools an "
             "administrator and the users know, each described in its own page.",
             ".SH COMMANDS"]
    for name in names:
        page += [".TP", f"\\fBcondorpy {_esc(name)}\\fR",
                 f"{_esc(COMMANDS[name][1])}; see \\fBcondorpy\\-{_esc(name)}\\fR(1)."]
    page += [".SH FILES",
             ".TP", "\\fI/etc/condorpy/condor_config\\fR",
             "The configuration, then the files in \\fI/etc/condorpy/config.d/\\fR.",
             ".TP", "\\fI/var/lib/condorpy\\fR",
             "The job queue and history (spool) and the jobs' sandboxes (execute).",
             ".TP", "\\fI/var/log/condorpy\\fR", "StartLog and the starters' logs.",
             ".TP", "\\fI/run/condorpy\\fR", "The control socket the commands use.",
             ".TP", "\\fI/usr/share/condorpy\\fR",
             "Prometheus alert rules and scrape configuration, and a Grafana dashboard.",
             ".TP", "\\fI/usr/share/doc/condorpy\\fR", "The administrator's documentation.",
             ".SH ENVIRONMENT",
             ".TP", "\\fBCONDOR_CONFIG\\fR",
             "The configuration file to read instead of "
             "\\fI/etc/condorpy/condor_config\\fR.",
             ".TP", "\\fB_CONDOR_\\fR\\fINAME\\fR",
             "Sets the configuration knob \\fINAME\\fR, over the files.",
             ".TP", "\\fBCONDORPY_DEBUG\\fR",
             "When set, an internal error shows its traceback.",
             ".SH EXIT STATUS",
             "0 on success, 1 on an error the command explains, 2 on a usage error, 70 "
             "on an internal error.",
             ".SH SEE ALSO",
             ", ".join(f"\\fBcondorpy\\-{_esc(n)}\\fR(1)" for n in names) + ",",
             "\\fBsystemctl\\fR(1), \\fBcondor_config_val\\fR(1)"]
    return "\n".join(page) + "\n"


def write_pages(outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    names = list(COMMANDS)
    written = [outdir / "condorpy.1"]
    written[0].write_text(main_page(names))
    for name in names:
        path = outdir / f"condorpy-{name}.1"
        path.write_text(command_page(command(name)))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python3 -m condorpy.cli.manpage OUTDIR", file=sys.stderr)
        return 2
    for path in write_pages(Path(args[0])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
