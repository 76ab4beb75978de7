"""Issue #30, case 4 (first item): a user's expression cannot stall the daemon's loop.

The attacker asks the daemon to evaluate expressions that cost exponential time: a
``q -constraint`` whose regexp backtracks over a fresh subject each time (no cache can
answer it), an ``rm -constraint`` of the same kind, and a job whose Requirements does so
against every slot. Each is cut off by its evaluation budget and refused with a clear
reason, while the victim's requests are answered all along and the victim's job runs.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import QueueError
from condorpy.startd.client import call
from condorpy.queue.jobstore import JobStore
from condorpy.queue.query import QueryArgumentError, parse_query
from tests.attackers import User, attacker, fingerprint, open_base, victim  # noqa: F401
from tests.startd.daemon_helpers import Daemon, wait_for

# (a|aa)+$ on a run of a's followed by anything else backtracks Fibonacci(n) ways
# (about 10**8 for 40): seconds to minutes of matching in one call without a limit.
_RUN = "a" * 40


def _catastrophic(i: int) -> str:
    return f'regexp("(a|aa)+$", strcat("{_RUN}", "{i}!"))'


def test_catastrophic_constraints_are_refused_and_the_victim_is_served(
        open_base: Path, attacker: User, victim: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    try:
        # a job of the victim's to be seen in the queue (never matched: nothing runs)
        victim.write(victim.home / "idle.sub", "executable = /bin/true\n"
                     "requirements = false\nqueue\n")
        assert victim.cli(["submit", "idle.sub"], env=d.env()).rc == 0
        # and one of the attacker's, so a constraint has an ad to be evaluated against
        attacker.write(attacker.home / "idle.sub", "executable = /bin/true\n"
                       "requirements = false\nqueue\n")
        assert attacker.cli(["submit", "idle.sub"], env=d.env()).rc == 0
        victim_file = fingerprint(victim.home / "idle.sub")

        sock = d.socket
        started = attacker.home / "attack-started"   # (written by the attacker)
        stop = attacker.home / "attack-stop"

        def attack() -> dict[str, Any]:
            # raw requests, each with a constraint never seen before
            refused: list[str] = []
            answered = 0
            i = 0
            slowest = 0.0
            while not stop.exists() and i < 200:
                t0 = time.monotonic()
                try:
                    call(sock, "q", {"constraint": _catastrophic(i)}, timeout=60)
                    answered += 1
                except Exception as exc:  # noqa: BLE001 - the refusal is the point
                    refused.append(str(exc))
                slowest = max(slowest, time.monotonic() - t0)
                i += 1
                if i == 1:
                    started.write_text("")
            return {"refused": refused, "answered": answered, "slowest": slowest}

        def serve_victim() -> dict[str, Any]:
            lat: list[float] = []
            mine = 0
            for _ in range(15):
                t0 = time.monotonic()
                st = call(sock, "status", {}, timeout=60)
                lat.append(time.monotonic() - t0)
                assert st["ads"]
                t0 = time.monotonic()
                q = call(sock, "q", {"constraint": 'Owner == "cpyvictim"'}, timeout=60)
                lat.append(time.monotonic() - t0)
                mine = len(q["ads"])
            return {"served": len(lat), "max": max(lat), "mine": mine}

        quiet = victim.call(serve_victim, timeout=120)
        assert quiet.kind == "ok", quiet
        attack_out: list[Any] = []
        t = threading.Thread(target=lambda: attack_out.append(attacker.call(attack, timeout=120)))
        t.start()
        try:
            wait_for(started.exists, 60, d.output)
            served = victim.call(serve_victim, timeout=120)
        finally:
            stop.write_text("")
            t.join(180)
        assert served.kind == "ok", served
        # every victim request was answered, during the attack
        assert served.value["served"] == 30 and served.value["mine"] == 1
        print(f"victim: 30 requests during the attack, slowest "
              f"{served.value['max'] * 1000:.0f} ms (without it: "
              f"{quiet.value['max'] * 1000:.0f} ms)")
        assert attack_out and attack_out[0].kind == "ok", attack_out
        got = attack_out[0].value
        print(f"attacker: {len(got['refused'])} queries refused, slowest "
              f"{got['slowest'] * 1000:.0f} ms")
        assert got["answered"] == 0, got
        # it stopped when told to, after the victim's last request: they overlapped
        assert len(got["refused"]) < 200, got
        assert got["refused"] and all("exceeded its budget" in r for r in got["refused"]), got
        assert all("regexp(" in r for r in got["refused"])   # the refusal names it

        # the command-line rm with such a constraint: refused, nothing removed
        res = attacker.cli(["rm", "-constraint", _catastrophic(999)], env=d.env())
        assert res.rc != 0 and "exceeded its budget" in res.stderr, res
        assert sorted(d.statuses().values()) == [1, 1]
        assert fingerprint(victim.home / "idle.sub") == victim_file
        assert d.call("ping")["pid"] == d.proc.pid  # type: ignore[union-attr]
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_job_whose_requirements_never_end_is_held_and_others_run(
        open_base: Path, attacker: User, victim: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    try:
        # exponential twice over: a backtracking regexp, and attributes naming each
        # other twice per level (2**40 evaluations of A0 without a budget)
        chain = "".join(f"+A{i} = A{i - 1} + A{i - 1}\n" for i in range(1, 41))
        attacker.write(attacker.home / "slow.sub",
                       "executable = /bin/true\n+A0 = 1\n" + chain +
                       f"requirements = {_catastrophic(0)} || A40 > 0\nqueue\n")
        res = attacker.cli(["submit", "slow.sub"], env=d.env())
        assert res.rc != 0 and "exceed the evaluation budget" in res.stderr, res
        # refused at submit; the same Requirements edited into a queued job of the
        # attacker's is met when matched, and held there
        attacker.write(attacker.home / "edited.sub",
                       "executable = /bin/true\nhold = true\nqueue\n")
        assert attacker.cli(["submit", "edited.sub"], env=d.env()).rc == 0
        mine = f'Owner == "{attacker.name}"'
        sock = d.socket
        edited = attacker.call(lambda: (
            call(sock, "qedit", {"constraint": mine, "attrs": ["Requirements"],
                                 "values": [_catastrophic(0)]}, timeout=60),
            call(sock, "release", {"constraint": mine}, timeout=60)))
        assert edited.kind == "ok", edited
        victim.write(victim.home / "ok.sub", "executable = /usr/bin/id\narguments = -un\n"
                     "output = out\nqueue\n")
        assert victim.cli(["submit", "ok.sub"], env=d.env()).rc == 0
        out = victim.home / "out"
        wait_for(lambda: out.exists() and out.stat().st_size > 0, 60, d.output)
        assert out.read_text().strip() == victim.name
        assert fingerprint(out)[2] == victim.uid
        wait_for(lambda: 5 in d.statuses().values(), 30, d.output)
        held = d.call("q", constraint=mine)["ads"][0]
        assert "exceeded their evaluation budget" in held, held
        assert d.call("status")["ads"]
    finally:
        d.stop()
        d.kill_leftovers()


def test_the_store_refuses_a_constraint_over_its_budget_naming_it(tmp_path: Path) -> None:
    # the queue's own filter, without a daemon: a job ad whose attributes name each
    # other twice per level, and a constraint that reaches the top of them
    chain = "\n".join(f"A{i} = A{i - 1} + A{i - 1}" for i in range(1, 41))
    with JobStore(tmp_path, clock=lambda: 0.0) as store:   # a still clock: steps only
        store.submit([ClassAd.parse_old(f'Owner = "a"\nJobStatus = 1\nA0 = 1\n{chain}')],
                     None)
        store.submit([ClassAd.parse_old('Owner = "b"\nJobStatus = 1')], None)
        assert [r.ad.evaluate("Owner") for r in store.jobs('Owner == "b"')] == ["b"]
        assert [r.ad.evaluate("Owner") for r in store.jobs("A10 == 1024")] == ["a"]
        with pytest.raises(QueueError, match=r"constraint 'isError\(A40\)': evaluation "
                                             r"exceeded its budget"):
            store.jobs("isError(A40)")     # the error inside is no escape


def test_the_command_lines_own_selection_refuses_it_too() -> None:
    # condorpy q and history select among the ads they fetched, in the user's process
    ads = [ClassAd.parse_old(f'Owner = "a"\nClusterId = {i}\nProcId = 0\nJobStatus = 1')
           for i in range(1, 4)]
    query = parse_query(["-constraint", _catastrophic(7)], "q")
    with pytest.raises(QueryArgumentError, match=r"-constraint 'regexp\(.*: evaluation "
                                                  r"exceeded its budget"):
        query.select(ads)
    assert len(parse_query(["-constraint", "ClusterId > 1"], "q").select(ads)) == 2
