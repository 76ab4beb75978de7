"""Submissions in parts under way (condorpy.queue.staging.OpenSubmissions): what a
submission staged goes when its connection closes before the last part or when it
sends nothing for the timeout; a later part of a dropped submission, or one on another
connection, is refused; a submission queued, refused or aborted leaves nothing to drop."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.queue.jobstore import JobStore
from condorpy.queue.staging import OpenSubmissions


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    with JobStore(tmp_path) as st:
        yield st


def _stage(st: JobStore, n: int) -> int:
    cluster = st.new_cluster_id(owner_uid=1000)
    st.stage(cluster, [(cluster, i, 1, 0, f'Cmd = "/bin/true"\nProcId = {i}\n')
                       for i in range(n)], owner_uid=1000)
    return cluster


def test_a_closed_connection_drops_what_its_submission_staged(
        store: JobStore, caplog: pytest.LogCaptureFixture) -> None:
    subs = OpenSubmissions(store.staged, lambda: 300.0)
    mine, other = _stage(store, 3), _stage(store, 2)
    subs.began(mine, ("conn", 1), "alice (pid 7)", now=10.0)
    subs.began(other, ("conn", 2), "alice (pid 8)", now=10.0)
    subs.closed(("conn", 3))                    # a connection with nothing under way
    assert store.staged.count(mine) == 3 and subs.under_way() == sorted([mine, other])
    subs.closed(("conn", 1))
    assert store.staged.count(mine) == 0 and store.staged.count(other) == 2
    assert subs.under_way() == [other]
    assert f"submission of cluster {mine} by alice (pid 7) abandoned: its connection " \
           "closed before the last part; its 3 staged job(s) dropped" in caplog.text
    # its next part, were it to come, is refused rather than queued short
    why = subs.part(mine, ("conn", 1), now=11.0)
    assert why is not None and "no submission under way" in why


def test_a_silent_submission_is_dropped_after_the_timeout(store: JobStore) -> None:
    limit = [300.0]
    subs = OpenSubmissions(store.staged, lambda: limit[0])
    assert subs.next_due() is None
    quiet, busy = _stage(store, 4), _stage(store, 1)
    subs.began(quiet, "a", "alice", now=100.0)
    subs.began(busy, "b", "bob", now=100.0)
    assert subs.next_due() == 400.0
    assert subs.part(busy, "b", now=350.0) is None       # a part keeps it under way
    subs.tick(399.0)
    assert subs.under_way() == sorted([quiet, busy])
    subs.tick(400.0)
    assert subs.under_way() == [busy] and store.staged.count(quiet) == 0
    assert store.staged.count(busy) == 1 and subs.next_due() == 650.0
    limit[0] = 10.0                          # a reconfiguration applies at once
    subs.tick(360.0)
    assert subs.under_way() == [] and store.staged.count(busy) == 0


def test_parts_on_another_connection_are_refused_and_an_end_forgets(
        store: JobStore) -> None:
    subs = OpenSubmissions(store.staged, lambda: 300.0)
    cluster = _stage(store, 2)
    subs.began(cluster, "a", "alice", now=0.0)
    why = subs.part(cluster, "b", now=1.0)
    assert why is not None and "another connection" in why
    assert store.staged.count(cluster) == 2       # the refusal drops nothing
    subs.ended(cluster)                           # queued, refused or aborted
    subs.closed("a")
    subs.tick(10_000.0)
    assert store.staged.count(cluster) == 2       # not this watch's to drop any more
    assert subs.under_way() == [] and subs.next_due() is None
