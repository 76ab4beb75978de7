"""`condorpy submit` runs condor_submit's checks before anything is queued (issue 23,
item 5), against a real daemon: a typo is a warning on stderr and the job is queued; a
missing executable, unbalanced quotes or a size that is not one exit non-zero, name the
submit file and line, and leave the queue as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.startd.client import RequestRefused
from tests.startd.daemon_helpers import Daemon, running


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # START = False: jobs stay in the queue, where the test counts them
    with running(Daemon(tmp_path_factory.mktemp("submitchecks"), extra="START = False\n")) as d:
        yield d


def submit(d: Daemon, cwd: Path, text: str) -> tuple[int, str, str]:
    (cwd / "job.sub").write_text(text)
    res = d.cli("submit", "job.sub", cwd=cwd, check=False)
    return res.returncode, res.stdout, res.stderr


def test_a_typo_warns_and_still_queues(daemon: Daemon, tmp_path: Path) -> None:
    before = len(daemon.statuses())
    rc, out, err = submit(daemon, tmp_path, "executable = /bin/true\n"
                          "requst_memory = 100\nfoo = bar\narguments = $(foo)\nqueue\n")
    assert rc == 0, err
    assert "1 job(s) submitted" in out
    (line,) = err.splitlines()
    assert "job.sub, line 2" in line and "requst_memory = 100" in line
    assert "typo of request_memory" in line
    assert len(daemon.statuses()) == before + 1


@pytest.mark.parametrize("text,line,words", [
    ("executable = /bin/nonexistent\nqueue\n", 1, "/bin/nonexistent does not exist"),
    ("executable = /bin/true\narguments = \"unterminated\nqueue\n", 2, "never closed"),
    ("executable = /bin/true\nrequest_memory = lots\nqueue\n", 2, "not a size"),
    ("executable = /bin/true\nrequest_disk = 10 QB\nqueue\n", 2, "unit"),
])
def test_errors_name_the_line_and_queue_nothing(daemon: Daemon, tmp_path: Path,
                                                text: str, line: int, words: str) -> None:
    before = daemon.statuses()
    rc, out, err = submit(daemon, tmp_path, text)
    assert rc != 0
    assert "submitted" not in out
    assert f"job.sub, line {line}" in err and words in err, err
    assert daemon.statuses() == before


def test_the_control_socket_refuses_an_empty_job_ad(daemon: Daemon) -> None:
    before = daemon.statuses()
    with pytest.raises(RequestRefused) as info:
        daemon.call("submit", cluster=None, ads=['MyType = "Job"\nCmd = "/bin/true"\n',
                                                 "# nothing\n"])
    assert "the job ad is empty" in str(info.value)
    assert "submitted job ad 1" in str(info.value)
    assert daemon.statuses() == before
