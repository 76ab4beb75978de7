"""The knobs a starter obeys are one list, owned by the starter's knob reader
(condorpy.starter.knobs.KNOBS), and the daemon sends exactly those with every launch."""

from __future__ import annotations

from typing import Any

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.starter.ads import custom_memory_limit
from condorpy.starter.knobs import KNOBS, knob_names, settings_from_knobs, starter_knobs


class _Recording:
    """A real configuration that notes every knob name asked of it."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.asked: set[str] = set()

    def __getattr__(self, attr: str) -> Any:
        real = getattr(self.cfg, attr)
        if not callable(real) or attr in ("names", "invalid", "where"):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            if args and isinstance(args[0], str):
                self.asked.add(args[0].upper())     # every read names its knob first
            return real(*args, **kwargs)
        return call


def test_the_list_is_what_the_starter_reads() -> None:
    cfg = Config.from_mapping({"SLOT2_USER": "slotuser2", "NUM_CPUS": "4"},
                              source="<test>", subsystem="STARTER")
    rec = _Recording(cfg)
    settings_from_knobs(rec, execute="/x")   # type: ignore[arg-type]
    for name in ("CGROUP_HARD_MEMORY_LIMIT_EXPR", "CGROUP_SOFT_MEMORY_LIMIT_EXPR",
                 "CGROUP_LOW_MEMORY_LIMIT"):
        custom_memory_limit(rec, name, ClassAd(), ClassAd())   # type: ignore[arg-type]
    assert rec.asked - {"SLOT2_USER"} <= set(KNOBS)
    assert set(KNOBS) <= rec.asked


def test_the_daemon_sends_the_list_and_the_slot_users() -> None:
    cfg = Config.from_mapping({"SLOT2_USER": "slotuser2", "NUM_CPUS": "4",
                               "USE_PID_NAMESPACES": "true"},
                              source="<test>", subsystem="STARTER")
    assert knob_names(cfg)[-1] == "SLOT2_USER"
    sent = starter_knobs(cfg)
    assert sent["SLOT2_USER"] == "slotuser2" and sent["USE_PID_NAMESPACES"] == "true"
    assert "NUM_CPUS" not in sent
    assert set(sent) <= set(KNOBS) | {"SLOT2_USER"}
