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

from condorpy.classad import ClassAd, Error, Undefined
from condorpy.config import Config, KnobReader, load_config
from condorpy.errors import ConfigError, StarterError
from condorpy.inputs import read_text
from condorpy.starter.knobs import settings_from_knobs
from condorpy.starter.starter import Starter

EXIT_HELD = 3
EXIT_VACATED = 4


def _read_ad(path: str, what: str) -> tuple[ClassAd, str]:
    text = read_text(path, f"the {what} {path}", on_os_error=lambda why: StarterError(
        f"cannot read the {what} {path}: {why}"))
    return ClassAd.parse_old(text, source=path), text


def _values(ad: ClassAd, target: ClassAd | None = None) -> dict[str, object]:
    """Every attribute evaluated; undefined and error values are simply absent."""
    out: dict[str, object] = {}
    for name in ad.keys():
        value = ad.evaluate(name, target)
        if value is Undefined or value is Error:
            continue
        out[name] = value
    return out


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


def _custom_limit(cfg: KnobReader, name: str, job: ClassAd, slot: ClassAd) -> int | None:
    """A CGROUP_*_MEMORY_LIMIT_EXPR: an expression over the job and slot ads, in MB."""
    expr_text = cfg.get(name)
    if not expr_text:
        return None
    value = slot.eval_expr(expr_text, job)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise cfg.invalid(name, f"an expression giving a number of MB for this job "
                                f"(it gives {value!r})")
    return int(value)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="condorpy starter", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job-ad", required=True, help="the job ad (old ClassAd format)")
    parser.add_argument("--slot-ad", required=True, help="the slot ad (old ClassAd format)")
    parser.add_argument("--execute", required=True, help="the EXECUTE directory")
    parser.add_argument("--result", help="write the final job ad here (default: stdout)")
    parser.add_argument("--config", help="condor_config file (default: $CONDOR_CONFIG)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a configuration knob (repeatable)")
    args = parser.parse_args(argv)

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
        custom_hard_mb=_custom_limit(cfg, "CGROUP_HARD_MEMORY_LIMIT_EXPR", job_ad, slot_ad),
        custom_soft_mb=_custom_limit(cfg, "CGROUP_SOFT_MEMORY_LIMIT_EXPR", job_ad, slot_ad))
    starter = Starter(_values(job_ad, slot_ad), _values(slot_ad, job_ad), settings,
                      job_ad_text=job_ad.to_old(), machine_ad_text=slot_ad.to_old(),
                      handle_signals=True)
    outcome = starter.run()
    final = job_ad.copy()
    for name, value in outcome.attributes.items():
        final[name] = value
    text = final.to_old()
    if not text.endswith("\n"):
        text += "\n"
    if args.result:
        try:
            tmp = args.result + ".tmp"
            with open(tmp, "w") as fh:
                fh.write(text)
            os.replace(tmp, args.result)
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
