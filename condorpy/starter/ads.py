"""The job and slot ads around one starter run: evaluated values in, final ad out.

Shared by ``condorpy starter`` and the startd's fork server, so that both hand the
Starter the same values and write the same final ad.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from condorpy.classad import ClassAd, Error, Undefined
from condorpy.config import KnobReader


def ad_values(ad: ClassAd, target: ClassAd | None = None) -> dict[str, object]:
    """Every attribute evaluated; undefined and error values are simply absent."""
    out: dict[str, object] = {}
    for name in ad.keys():
        value = ad.evaluate(name, target)
        if value is Undefined or value is Error:
            continue
        out[name] = value
    return out


def custom_memory_limit(cfg: KnobReader, name: str, job: ClassAd,
                        slot: ClassAd) -> int | None:
    """A CGROUP_*_MEMORY_LIMIT_EXPR or CGROUP_LOW_MEMORY_LIMIT: an expression over the
    job and slot ads, in MB."""
    expr_text = cfg.get(name)
    if not expr_text:
        return None
    value = slot.eval_expr(expr_text, job)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise cfg.invalid(name, f"an expression giving a number of MB for this job "
                                f"(it gives {value!r})")
    return int(value)


def final_ad_text(job_ad: ClassAd, attributes: Mapping[str, object]) -> str:
    """The job ad with the run's attributes merged in, in the old format."""
    final = job_ad.copy()
    for name, value in attributes.items():
        final[name] = value
    text = final.to_old()
    return text if text.endswith("\n") else text + "\n"


def write_atomically(path: str, text: str) -> None:
    """Whole or absent: a reader (a restarted startd) never sees half a final ad.
    The temporary name carries the pid so that two writers never share one."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
