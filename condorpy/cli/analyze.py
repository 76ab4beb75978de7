"""``condorpy q -analyze`` and ``-better-analyze``: the selected jobs (those of the
caller, or the ids and owners named) judged against the slot ads the running daemon
advertises, by the policy engine built from the same configuration (for its
evaluation context and its carving of partitionable slots), as ``condorpy policy
explain`` judges them."""

from __future__ import annotations

import sys
import time

from condorpy.classad import ClassAd
from condorpy.clock import SystemClock
from condorpy.config import load_config
from condorpy.policy.explain import live_views
from condorpy.queue.analysis import analyze
from condorpy.queue.formats import ScheddLabel
from condorpy.queue.query import Query
from condorpy.startd.client import call
from condorpy.startd.core import load_core
from condorpy.startd.paths import client_socket


def analyze_main(config: str | None, query: Query, jobs: list[ClassAd],
                 schedd: ScheddLabel) -> int:
    """Print the analysis of ``jobs`` (already selected by ``query``)."""
    slot_texts = call(client_socket(load_config(config)), "status", {})["ads"]
    slot_ads = [ClassAd.parse_old(t, source="the daemon's slots") for t in slot_texts]
    engine = load_core(config).engine(SystemClock())
    views = live_views(engine, slot_ads)
    sys.stdout.write(analyze(engine, jobs, views, schedd=schedd,
                             better=query.output == "better-analyze", ctime=time.ctime))
    return 0
