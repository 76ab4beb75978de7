"""What the pool tests do with the reference pool's schedd: submit as alice, read the
queue and the history, and look at a job's process."""

from __future__ import annotations

import re
from pathlib import Path

from tests.pool.refpool import RefPool


def submit(pool: RefPool, jobdir: Path, text: str) -> int:
    """Submit ``text`` as alice from ``jobdir`` (a directory both sides see at one path)."""
    (jobdir / "job.sub").write_text(text)
    res = pool.condor("condor_submit", "job.sub", user="alice", cwd=str(jobdir))
    return _cluster(res.stdout)


def chown_alice(pool: RefPool, d: Path) -> None:
    pool.condor("chown", "-R", "alice:alice", "/" + str(d.relative_to(pool.root)))


def submit_inside(pool: RefPool, d: Path, text: str) -> int:
    """Submit ``text`` as alice from ``d``, a directory inside the pool's chroot only."""
    (d / "job.sub").write_text(text)
    chown_alice(pool, d)
    res = pool.condor("condor_submit", "job.sub", user="alice",
                      cwd="/" + str(d.relative_to(pool.root)))
    return _cluster(res.stdout)


def _cluster(stdout: str) -> int:
    m = re.search(r"submitted to cluster (\d+)", stdout)
    assert m, stdout
    return int(m.group(1))


def history(pool: RefPool, cluster: int, *attrs: str) -> dict[int, list[str]]:
    res = pool.condor("condor_history", str(cluster), "-af:,", "ProcId", *attrs, check=False)
    out = {}
    for line in res.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if parts[0].isdigit():
            out[int(parts[0])] = parts[1:]
    return out


def queued(pool: RefPool, cluster: int) -> int:
    res = pool.condor("condor_q", str(cluster), "-af", "ProcId", check=False)
    return len(res.stdout.split())


def cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""
