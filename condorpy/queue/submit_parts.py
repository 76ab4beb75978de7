"""A submission cut into bounded parts for the daemon (condorpy submit's wire): the
cluster's common ad (its first job's) once per part, then each job as its differences
from it, as HTCondor's schedd keeps a proc ad as differences from its cluster ad. A
``queue 100000`` is then about a hundred requests of at most :data:`PART_BYTES`, built
as the jobs are made, rather than one request holding every ad whole.

Pure: ads in, the arguments of each ``submit`` request out; the daemon's side is
``Commands._submit_part`` (condorpy/startd/commands.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from condorpy.classad import ClassAd
from condorpy.queue.records import Differ

__all__ = ["PART_BYTES", "PART_JOBS", "PART_LINES", "parts", "part_lines"]

PART_BYTES = 2 << 20      # of job text per request, well under the wire's 16 MB
PART_JOBS = 1000          # the daemon's loop spends well under a second on one
# Lines of job text per request (the jobs' differing attributes, all told): the daemon
# parses them in its loop, about 8 us a line, and refuses a part with more.
PART_LINES = 20_000


def part_lines(texts: Iterable[str]) -> int:
    """The attribute lines (at most) in these texts of jobs."""
    return sum(t.count("\n") + 1 for t in texts if t)


def _lines(ad: ClassAd) -> dict[str, str]:
    """Attribute (lower case) -> its line of old ClassAd text."""
    out = {}
    for line in ad.to_old().splitlines():
        name = line.split("=", 1)[0].strip().lower()
        if name:
            out[name] = line
    return out


def parts(cluster: int, total: int, ads: Iterable[ClassAd], *,
          part_bytes: int = PART_BYTES, part_jobs: int = PART_JOBS,
          max_lines: int = PART_LINES) -> Iterator[dict[str, Any]]:
    """The ``submit`` requests' arguments for ``total`` jobs ``ads`` of ``cluster``;
    only the last says ``more: false``. Holds one part at a time."""
    common: dict[str, str] | None = None
    differ: Differ | None = None
    common_text = ""
    procs: list[str] = []
    unset: dict[str, list[str]] = {}
    size = 0
    nlines = 0
    first = 0

    def part(more: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"cluster": cluster, "common": common_text, "procs": procs,
                               "first": first, "total": total, "more": more}
        if unset:
            out["unset"] = unset
        return out

    for ad in ads:
        if common is None or differ is None:
            common = _lines(ad)
            differ = Differ(ad)
            common_text = "\n".join(common.values()) + "\n"
        # only the attributes that differ are written out (writing every attribute of
        # every job was most of the client's time)
        diff = differ.of(ad)
        if diff is not None:
            text, gone = diff.to_old().rstrip("\n"), []
        else:
            lines = _lines(ad)
            text = "\n".join(line for name, line in lines.items()
                             if common.get(name) != line)
            gone = [ad_name for ad_name in common if ad_name not in lines]
        n = part_lines((text,))
        if procs and (size + len(text) > part_bytes or len(procs) >= part_jobs
                      or nlines + n > max_lines):
            yield part(True)
            first += len(procs)
            procs, unset, size, nlines = [], {}, 0, 0
        if gone:
            unset[str(len(procs))] = gone
        procs.append(text)
        size += len(text) + 4
        nlines += n
    if common is not None:
        yield part(False)
