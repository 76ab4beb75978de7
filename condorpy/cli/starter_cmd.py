"""``condorpy starter``: run one job under a starter and write its final job ad.

    condorpy starter --job-ad JOB.ad --slot-ad SLOT.ad --execute DIR [--result OUT.ad]
                     [--config FILE] [--set NAME=VALUE ...]

Knobs come from ``--set``, then the configuration (``--config``, ``$CONDOR_CONFIG``
or the default file, with ``_CONDOR_<NAME>`` environment variables on top), read as
the STARTER subsystem. Exit status: 0 the job ran to its end (see ExitCode/ExitSignal in the ad), 3 it was
held, 4 it was vacated (soft or hard kill), 1 the starter itself could not work.
"""

from __future__ import annotations

import argparse
import os
import sys

from condorpy.classad import ClassAd
from condorpy.cli.parsing import tool_parser
from condorpy.classad.formats import parse_old_nonempty
from condorpy.config import Config, load_config
from condorpy.errors import ConfigError, StarterError
from condorpy.inputs import read_text
from condorpy.starter.ads import (ad_values, custom_memory_limit, final_ad_text,
                                  write_atomically)
from condorpy.starter.knobs import settings_from_knobs
from condorpy.starter.starter import Starter

EXIT_HELD = 3
EXIT_VACATED = 4


def _read_ad(path: str, what: str) -> tuple[ClassAd, str]:
    text = read_text(path, f"the {what} {path}", on_os_error=lambda why: StarterError(
        f"cannot read the {what} {path}: {why}"))
    return parse_old_nonempty(text, path, what), text


def _load_config(path: str | None, overrides: dict[str, str]) -> Config:
    """``--config``, else $CONDOR_CONFIG, else the default file when there is one; with
    none, only built-in defaults and ``_CONDOR_<NAME>`` environment variables count.
    ``--set`` values win over all of them."""
    return load_config(path, subsystem="STARTER", overrides=overrides)


def _check_result_path(path: str) -> None:
    """Refuse a --result that cannot be written before the job runs, not after."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise StarterError(f"--result {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StarterError(f"--result {path}: directory {parent} is not writable")
    if os.path.isdir(path):
        raise StarterError(f"--result {path} is a directory")


def parser() -> argparse.ArgumentParser:
    parser = tool_parser("condorpy starter", __doc__,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job-ad", required=True, help="the job ad (old ClassAd format)")
    parser.add_argument("--slot-ad", required=True, help="the slot ad (old ClassAd format)")
    parser.add_argument("--execute", required=True, help="the EXECUTE directory")
    parser.add_argument("--result", help="write the final job ad here (default: stdout)")
    parser.add_argument("--config", help="condor_config file (default: $CONDOR_CONFIG)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a configuration knob (repeatable)")
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)

    overrides: dict[str, str] = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--set {item!r} is not NAME=VALUE")
        overrides[name.strip().upper()] = value.strip()
    if args.result:
        _check_result_path(args.result)
    cfg = _load_config(args.config, overrides)

    job_ad, job_text = _read_ad(args.job_ad, "job ad")
    slot_ad, slot_text = _read_ad(args.slot_ad, "slot ad")
    settings = settings_from_knobs(
        cfg, execute=os.path.abspath(args.execute),
        custom_hard_mb=custom_memory_limit(cfg, "CGROUP_HARD_MEMORY_LIMIT_EXPR", job_ad,
                                           slot_ad),
        custom_soft_mb=custom_memory_limit(cfg, "CGROUP_SOFT_MEMORY_LIMIT_EXPR", job_ad,
                                           slot_ad),
        low_memory_mb=custom_memory_limit(cfg, "CGROUP_LOW_MEMORY_LIMIT", job_ad, slot_ad))
    starter = Starter(ad_values(job_ad, slot_ad), ad_values(slot_ad, job_ad), settings,
                      job_ad_text=job_ad.to_old(), machine_ad_text=slot_ad.to_old(),
                      handle_signals=True)
    outcome = starter.run()
    text = final_ad_text(job_ad, outcome.attributes)
    if args.result:
        try:
            write_atomically(args.result, text)
        except OSError as exc:
            # The job has run: its final ad must not be lost with the file.
            sys.stdout.write(text)
            raise StarterError(f"cannot write --result {args.result}: {exc.strerror}; "
                               "the final job ad is on standard output") from None
    else:
        sys.stdout.write(text)
    if outcome.hold is not None:
        return EXIT_HELD
    return EXIT_VACATED if outcome.vacated else 0
