"""Naming one of several execution points on a host: STARTD_NAME (the slots are
slotN@<name>@<host>, as HTCondor names a named startd's slots) and NETWORK_HOSTNAME
(the host's name everywhere the configuration and the ads use it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.clock import ManualClock
from condorpy.config import Config
from condorpy.pool import daemon_ad
from condorpy.slots.configure import daemon_name
from condorpy.startd.core import Host, load_core


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
