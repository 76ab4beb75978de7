"""condorpy submit's checks against condor_submit 23.9.6's own (in the reference
pool's chroot, -dry-run): the same lines are warned about as unused ("Is it a typo?"),
and the same descriptions are refused. Where condorpy chooses differently, the test
says so: it also warns about request_<name> near a standard request, and refuses a
request that is not a size (condor_submit queues ``request_memory = lots``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest

from condorpy.errors import SubmitError
from condorpy.queue.submit import LocalFS, parse_submit, read_description
from condorpy.queue.submit_checks import check_executables, unused_lines
from tests.pool.refpool import PoolUnavailable, RefPool

pytestmark = pytest.mark.pool

WARNS = {
    "typo": "executable = /bin/true\nrequst_memory = 100\nqueue\n",
    "macros": "executable = /bin/true\nfoo = bar\narguments = $(foo)\nunused = 1\n"
              "q = $(macro)\nmacro = 3\nqueue\n",
    "known": "executable = /bin/true\n+Project = \"x\"\nMY.W = 1\naccounting_group = g\n"
             "request_foo = 1\nconcurrency_limits = a\nmax_retries = 2\nqueue\n",
    "hints": "executable = /bin/true\nrequest_cpu = 1\nouput = x\nqueue\n",
    "after_queue": "executable = /bin/true\nN = 2\nqueue $(N)\nzzzqqq = 1\n",
}
REFUSED = {
    "missing": "executable = /bin/nonexistent\nqueue\n",
    "unterminated": "executable = /bin/true\narguments = \"unterminated\nqueue\n",
    "trailing": "executable = /bin/true\narguments = \"a\" b\nqueue\n",
    "v1_quote": "executable = /bin/true\narguments = a \"b\nqueue\n",
    "v2_single": "executable = /bin/true\narguments = \"a 'b\"\nqueue\n",
    "env_single": "executable = /bin/true\nenvironment = \"A='x\"\nqueue\n",
    "unit": "executable = /bin/true\nrequest_disk = 10 QB\nqueue\n",
    "no_executable": "arguments = 1\nqueue\n",
}
ONLY_CONDORPY_REFUSES = {"lots": "executable = /bin/true\nrequest_memory = lots\nqueue\n"}


@pytest.fixture(scope="module")
def pool() -> Iterator[RefPool]:
    worker = os.environ.get("PYTEST_XDIST_WORKER") or "main"
    pool = RefPool(instance=f"{worker}-dryrun")
    try:
        pool.build()
    except PoolUnavailable as exc:
        if os.environ.get("CONDORPY_REQUIRE_POOL") == "1":
            pytest.fail(f"reference pool unavailable: {exc}")
        pytest.skip(f"reference pool unavailable: {exc}")
    if os.geteuid() != 0:
        pytest.skip("condor_submit runs in the reference pool's chroot: needs root")
    try:
        yield pool
    finally:
        pool.close()


def condor_submit(pool: RefPool, case: str, text: str) -> tuple[int, str]:
    inside = f"/tmp/condorpy-submitchecks/{case}"
    (pool.root / inside.lstrip("/")).mkdir(parents=True, exist_ok=True)
    (pool.root / inside.lstrip("/") / "job.sub").write_text(text)
    res = pool.condor("condor_submit", "-dry-run", "-", "job.sub", cwd=inside, check=False)
    return res.returncode, res.stderr


def ours(text: str) -> list[str]:
    """The keys condorpy warns about; SubmitError when it refuses."""
    desc = read_description(text, "job.sub")
    warned = [w.key for w in unused_lines(desc)]
    ads = parse_submit(text, "job.sub", cluster_id=1, owner="alice", submit_dir="/tmp",
                       qdate=0, env={})
    check_executables(desc, ads, LocalFS())
    return warned


@pytest.mark.parametrize("case", sorted(WARNS))
def test_the_same_lines_are_unused(pool: RefPool, case: str) -> None:
    rc, err = condor_submit(pool, case, WARNS[case])
    assert rc == 0, err
    theirs = sorted(re.findall(r"the line '(\w+) = [^']*' was unused", err))
    assert sorted(ours(WARNS[case])) == theirs, err


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_the_same_descriptions_are_refused(pool: RefPool, case: str) -> None:
    rc, err = condor_submit(pool, case, REFUSED[case])
    assert rc != 0 and "ERROR" in err
    with pytest.raises(SubmitError) as info:
        ours(REFUSED[case])
    assert info.value.file == "job.sub" and info.value.line is not None


def test_where_condorpy_chooses_differently(pool: RefPool) -> None:
    rc, _ = condor_submit(pool, "lots", ONLY_CONDORPY_REFUSES["lots"])
    assert rc == 0
    with pytest.raises(SubmitError, match="not a size"):
        ours(ONLY_CONDORPY_REFUSES["lots"])
    text = "executable = /bin/true\nrequest_memroy = 100\nqueue\n"
    rc, err = condor_submit(pool, "memroy", text)
    assert rc == 0 and "unused" not in err
    assert ours(text) == ["request_memroy"]

