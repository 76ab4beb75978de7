"""Slot ads read back by HTCondor's own ClassAd library (the reference wheel)."""

from __future__ import annotations

import itertools

import pytest

from condorpy.classad import ClassAd, parse_expr
from condorpy.slots.status_format import render_long

from tests.slots.helpers import gpu_machine, manager

classad2 = pytest.importorskip("classad2")
pytestmark = pytest.mark.differential


def test_pslot_ad_parses_and_matches_like_htcondor() -> None:
    m = manager(gpu_machine(), ("100%", 1, True))
    ours = m.ads(1000.0)[0]
    theirs = classad2.parseOne(render_long([ours]))
    for attr in ("Name", "Cpus", "Memory", "TotalGPUs", "AssignedGPUs", "SlotType"):
        assert theirs.eval(attr) == ours.evaluate(attr), attr
    for cpus, memory, gpus in itertools.product((1, 24, 25), (1, 96000, 96001), (None, 4, 5)):
        attrs = {"RequestCpus": cpus, "RequestMemory": memory, "RequestDisk": 10}
        if gpus is not None:
            attrs["RequestGPUs"] = gpus
        job_ours = ClassAd(attrs)
        job_theirs = classad2.ClassAd(attrs)
        got = parse_expr("WithinResourceLimits").evaluate(my=ours, target=job_ours)
        ref = classad2.ExprTree("MY.WithinResourceLimits").eval(theirs, job_theirs)
        assert got == ref, (attrs, got, ref)
        fits = cpus <= 24 and memory <= 96000 and (gpus or 0) <= 4
        assert got is fits
