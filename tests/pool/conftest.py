"""The reference pool fixture for tests marked ``pool``.

The pool is built once (cached under tests/pool/.cache) and started once per test
session. Where it cannot be built or run (not root, no Debian mirror) the pool tests
are skipped with the reason; ``CONDORPY_REQUIRE_POOL=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.pool.refpool import PoolUnavailable, RefPool


@pytest.fixture(scope="session")
def refpool() -> Iterator[RefPool]:
    pool = RefPool()
    try:
        pool.start()
    except PoolUnavailable as exc:
        if os.environ.get("CONDORPY_REQUIRE_POOL") == "1":
            pytest.fail(f"reference pool unavailable: {exc}")
        pytest.skip(f"reference pool unavailable: {exc}")
    try:
        yield pool
    finally:
        pool.stop()
