"""The attack harness itself: a root daemon, two ordinary users who submit through it."""

from __future__ import annotations

from pathlib import Path

from tests.attackers import User, attacker, fingerprint, open_base, victim  # noqa: F401
from tests.startd.daemon_helpers import Daemon, wait_for


def test_two_users_submit_as_themselves(open_base: Path, attacker: User,
                                        victim: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    try:
        for u in (attacker, victim):
            u.write(u.home / "j.sub", "executable = /usr/bin/id\narguments = -un\n"
                    "output = out\nqueue\n")
            res = u.cli(["submit", "j.sub"], env=d.env())
            assert res.rc == 0, res
        wait_for(lambda: (attacker.home / "out").exists() and (victim.home / "out").exists()
                 and all((u.home / "out").stat().st_size for u in (attacker, victim)), 60,
                 d.output)
        assert (attacker.home / "out").read_text().strip() == attacker.name
        assert (victim.home / "out").read_text().strip() == victim.name
        assert fingerprint(victim.home / "out")[2] == victim.uid
    finally:
        d.stop()
        d.kill_leftovers()
