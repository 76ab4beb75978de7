"""Naming one of several execution points on a host: STARTD_NAME (the slots are
slotN@<name>@<host>, as HTCondor names a named startd's slots) and NETWORK_HOSTNAME
(the host's name everywhere the configuration and the ads use it)."""

from __future__ import annotations

import os
import selectors
import socket
from pathlib import Path

import pytest

from condorpy.clock import ManualClock
from condorpy.errors import StartdError
from condorpy.config import Config
from condorpy.pool import daemon_ad
from condorpy.slots.configure import daemon_name
from condorpy.startd.control_socket import ControlSocket
from condorpy.startd.core import Host, load_core
from condorpy.startd.paths import StatePaths, claim_dirs, make_dirs, release_dirs
from condorpy.startd.reconfig_report import needs_restart


@pytest.mark.parametrize("given,expected", [
    (None, "ep.example.org"),
    ("", "ep.example.org"),
    ("ep2", "ep2@ep.example.org"),
    ("glidein_7@ep.example.org", "glidein_7@ep.example.org"),
    ("a@b", "a@b"),
    ("ep.example.org", "ep.example.org"),      # the host itself: its full name
    ("EP", "ep.example.org"),                  # its short name, any case
    ("other.example.org", "other.example.org@ep.example.org"),
])
def test_startd_name_is_made_valid_as_htcondor_does(given: str | None,
                                                    expected: str) -> None:
    assert daemon_name(given, "ep.example.org") == expected


def test_network_hostname_is_the_hosts_name() -> None:
    cfg = Config.from_text("NETWORK_HOSTNAME = ep2.example.org\n"
                           "X = $(FULL_HOSTNAME) $(HOSTNAME)\n")
    assert (cfg.get("FULL_HOSTNAME"), cfg.get("HOSTNAME")) == ("ep2.example.org", "ep2")
    assert cfg.get("X") == "ep2.example.org ep2"
    assert cfg.get("UID_DOMAIN") == "ep2.example.org"
    assert cfg.get("HOST_ALIAS") == "ep2.example.org"
    short = Config.from_text("NETWORK_HOSTNAME = node7\nDEFAULT_DOMAIN_NAME = .site.org\n")
    assert (short.get("FULL_HOSTNAME"), short.get("HOSTNAME")) == ("node7.site.org", "node7")
    # a name made from the host's own (glidein style) does not loop
    own = Config.from_text("NETWORK_HOSTNAME = $(HOSTNAME)-b.example.org\n")
    assert own.get("FULL_HOSTNAME") == f"{Config.from_text('').get('HOSTNAME')}-b.example.org"
    assert Config.from_text("").get("FULL_HOSTNAME") == \
        Config.from_text("NETWORK_HOSTNAME =\n").get("FULL_HOSTNAME")


def _slot_ads(tmp_path: Path, text: str) -> list:    # type: ignore[type-arg]
    conf = tmp_path / "condor_config"
    conf.write_text("LOCAL_DIR = " + str(tmp_path) + "\nNUM_CPUS = 2\nNUM_SLOTS = 2\n" + text)
    core = load_core(str(conf), host=Host.VIRTUAL, env={})
    engine = core.engine(ManualClock(1_700_000_000.0))
    return [engine.slots[name].ad for name in sorted(engine.slots)]


def test_a_named_startds_slots_and_daemon_ad(tmp_path: Path) -> None:
    ads = _slot_ads(tmp_path, "NETWORK_HOSTNAME = ep.example.org\nSTARTD_NAME = ep2\n")
    assert [a.evaluate("Name") for a in ads] == ["slot1@ep2@ep.example.org",
                                                 "slot2@ep2@ep.example.org"]
    assert {a.evaluate("Machine") for a in ads} == {"ep.example.org"}
    daemon = daemon_ad.startd_ad(ads, "<127.0.0.1:5?noUDP>", 1)
    assert daemon is not None
    assert (daemon["Name"], daemon["Machine"]) == ("ep2@ep.example.org", "ep.example.org")


def test_an_unnamed_startds_slots_carry_the_host(tmp_path: Path) -> None:
    ads = _slot_ads(tmp_path, "NETWORK_HOSTNAME = ep.example.org\n")
    assert [a.evaluate("Name") for a in ads] == ["slot1@ep.example.org", "slot2@ep.example.org"]
    daemon = daemon_ad.startd_ad(ads, "<a>", 1)
    assert daemon is not None and daemon["Name"] == "ep.example.org"


def _paths(root: Path) -> StatePaths:
    out = StatePaths(spool=root / "spool", log=root / "log", lock=root / "log",
                     execute=root / "execute", socket=root / "log" / "c.sock")
    make_dirs(out)
    return out


def test_two_eps_cannot_share_execute_or_log(tmp_path: Path) -> None:
    first = _paths(tmp_path / "a")
    held = claim_dirs(first)
    with pytest.raises(StartdError, match=rf"EXECUTE {tmp_path}/a/execute is in use by "
                                          rf"another condorpy startd \(pid \d+\).*LOCAL_DIR"):
        claim_dirs(first)
    shared_log = StatePaths(spool=tmp_path / "b/spool", log=first.log, lock=first.log,
                            execute=tmp_path / "b/execute", socket=tmp_path / "b/c.sock")
    make_dirs(shared_log)
    with pytest.raises(StartdError, match=r"LOG .* is in use .*\(or LOG\)"):
        claim_dirs(shared_log)
    other = claim_dirs(_paths(tmp_path / "c"))      # another LOCAL_DIR: its own
    assert len(other) == 2
    release_dirs(other)
    release_dirs(held)
    assert not held
    release_dirs(claim_dirs(first))                 # let go: the next daemon takes them


def test_a_live_daemons_control_socket_is_not_taken(tmp_path: Path) -> None:
    path = tmp_path / "condorpy_startd.sock"
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(path))
    live.listen(1)
    sel = selectors.DefaultSelector()
    with pytest.raises(StartdError, match="another running daemon's.*own LOCK"):
        ControlSocket(path, sel, lambda *a: None, os.getuid(), lambda: None,
                      monotonic=lambda: 0.0)
    assert path.exists()
    live.close()                                    # stale now: replaced
    ControlSocket(path, sel, lambda *a: None, os.getuid(), lambda: None,
                  monotonic=lambda: 0.0).close()
    sel.close()


def test_renaming_an_ep_takes_a_restart() -> None:
    assert needs_restart({"STARTD_NAME", "NETWORK_HOSTNAME"}, True, True) == \
        ["NETWORK_HOSTNAME", "STARTD_NAME"]
