"""`condorpy classad`: evaluate ClassAd expressions and convert ads between formats.

    condorpy classad eval [--my FILE] [--target FILE] [--file EXPRS] [EXPR ...]
    condorpy classad format --in old|new|json --out old|new|json < ad

``eval`` prints one result per expression, in new-ClassAd literal syntax. An expression
that does not parse prints ``error`` (and a message on stderr); the run goes on and
exits with status 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from condorpy.classad import ClassAd, format_value, parse_expr
from condorpy.cli.parsing import add_help, tool_parser
from condorpy.classad.formats import (from_json, parse_new, parse_old_many,
                                      parse_old_nonempty, to_json, to_new, to_old)
from condorpy.errors import ClassAdError, ClassAdSyntaxError
from condorpy.inputs import loads_json, read_stdin, read_text


def _read(path: str) -> str:
    return read_text(path, on_os_error=lambda why: ClassAdError(f"cannot read {path}: {why}"))


def _load_old(path: str, what: str) -> ClassAd:
    return parse_old_nonempty(_read(path), "<stdin>" if path == "-" else path, what)


def _eval(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    my = _load_old(args.my, "MY ad") if args.my else None
    target = _load_old(args.target, "TARGET ad") if args.target else None
    exprs: list[tuple[str, str]] = []
    if args.file:
        for n, line in enumerate(_read(args.file).splitlines(), 1):
            if line.strip():
                exprs.append((f"{args.file}, line {n}", line))
    exprs += [(f"argument {i}", e) for i, e in enumerate(args.exprs, 1)]
    failed = False
    for where, text in exprs:
        try:
            value = parse_expr(text).evaluate(my, target)
        except ClassAdSyntaxError as e:
            failed = True
            print("error", file=out)
            print(f"condorpy classad: {where}: {e.reason} at column {e.column}: {text.strip()}",
                  file=err)
            continue
        print(format_value(value), file=out)
    return 1 if failed else 0


def _format(args: argparse.Namespace, out: TextIO) -> int:
    src = "<stdin>"
    text = read_stdin(src)
    if args.input == "old":
        ads = parse_old_many(text, src)
    elif args.input == "new":
        ads = _parse_new_many(text, src)
    else:
        import json
        try:
            data = loads_json(text)
        except ValueError:
            data = None
        if isinstance(data, list) and len(data) != 1:
            ads = [from_json(json.dumps(d), src) for d in data]
        else:
            ads = [from_json(text, src)]
    if args.output == "old":
        out.write("\n".join(to_old(a) for a in ads))
    elif args.output == "new":
        for a in ads:
            print(to_new(a), file=out)
    else:
        if len(ads) == 1:
            print(to_json(ads[0]), file=out)
        else:
            body = ",\n".join(to_json(a) for a in ads)
            print("[\n" + body + "\n]", file=out)
    return 0


def _parse_new_many(text: str, source: str) -> list[ClassAd]:
    """Several new-format ads one after another: split at top-level brackets."""
    from condorpy.classad.lexer import tokenize
    toks, raw = tokenize(text)
    ads: list[ClassAd] = []
    depth = 0
    start = 0
    pos = 0
    for t, r in zip(toks, raw):
        pos += len(r) - len(t)
        if t in ("[", "{", "("):
            if depth == 0 and t == "[":
                start = pos
            depth += 1
        elif t in ("]", "}", ")"):
            depth -= 1
            if depth == 0 and t == "]":
                ads.append(parse_new(text[start:pos + 1], source))
        pos += len(t)
    if not ads or depth != 0:
        ads = [parse_new(text, source)]  # reports the syntax error, with its position
    return ads


def parser() -> argparse.ArgumentParser:
    ap = tool_parser("condorpy classad", "ClassAd tools")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND",
                            help="eval or format")
    ev = sub.add_parser("eval", help="evaluate expressions", add_help=False,
                        description="Evaluate ClassAd expressions, one result line "
                                    "each, in new ClassAd syntax.")
    add_help(ev)
    ev.add_argument("--my", metavar="FILE", help="the MY ad (old format)")
    ev.add_argument("--target", metavar="FILE", help="the TARGET ad (old format)")
    ev.add_argument("--file", metavar="EXPRS", help="expressions, one per line")
    ev.add_argument("exprs", nargs="*", metavar="EXPR",
                    help="expressions to evaluate, one result line each")
    fm = sub.add_parser("format", help="convert ads read from stdin", add_help=False,
                        description="Convert ClassAds read from standard input "
                                    "between the old, new and JSON formats.")
    add_help(fm)
    fm.add_argument("--in", dest="input", choices=("old", "new", "json"), default="old",
                    help="the format read from standard input (default old)")
    fm.add_argument("--out", dest="output", choices=("old", "new", "json"), default="new",
                    help="the format written (default new)")
    return ap


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.cmd == "eval":
        return _eval(args, sys.stdout, sys.stderr)
    return _format(args, sys.stdout)
