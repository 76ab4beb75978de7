"""What a starter's usage report makes of the job ad, decided without I/O: the
attributes HTCondor's starter puts in its job updates (RemoteUserCpu, RemoteSysCpu,
ImageSize, ResidentSetSize, ProportionalSetSizeKb, MemoryUsage, DiskUsage, CpusUsage
...), with MemoryUsage the MEMORY_USAGE_METRIC expression over them, as HTCondor's
starter sends it."""

from __future__ import annotations

from typing import Any

from condorpy.classad import parse_expr
from condorpy.errors import ClassAdError

# What only the startd itself knows, never taken from a report.
_NOT_FROM_STARTER = frozenset({"cpususage"})


def job_ad_update(usage: dict[str, Any], cpus_usage: float | None,
                  memory_metric: str | None) -> dict[str, Any]:
    """The job ad's update from a usage report (values, and an Expr for MemoryUsage
    when ``memory_metric`` is set and parses; the measured MiB otherwise)."""
    attrs = {k: v for k, v in usage.items() if k.lower() not in _NOT_FROM_STARTER}
    if not attrs:
        return {}
    if cpus_usage is not None:
        attrs["CpusUsage"] = cpus_usage
    if memory_metric and "ResidentSetSize" in attrs:
        try:
            attrs["MemoryUsage"] = parse_expr(memory_metric, source="MEMORY_USAGE_METRIC",
                                              attribute="MemoryUsage")
        except ClassAdError:
            pass        # the starter's measured value stands
    return attrs
