"""A configuration measures the machine only when a knob read depends on a fact, and
then gives the same values as with the facts measured up front."""

from __future__ import annotations

from dataclasses import replace

from condorpy.config import Config, DetectedFacts, LazyFacts

from tests.config.helpers import FACTS

TEXT = """\
START = KeyboardIdle > 60 && $(MY_START)
MY_START = true
NAMED = slot-$(HOSTNAME)
SLOTS = $(DETECTED_CPUS)
"""


class Counted:
    def __init__(self, facts: DetectedFacts) -> None:
        self.facts = facts
        self.calls = 0

    def __call__(self) -> DetectedFacts:
        self.calls += 1
        return self.facts


def _lazy(facts: DetectedFacts = FACTS) -> tuple[Config, Counted]:
    measure = Counted(facts)
    return Config.from_text(TEXT, source="t.conf", detected=LazyFacts(measure, facts.extra),
                            seed=7), measure


def test_a_plain_knob_does_not_measure() -> None:
    cfg, measure = _lazy()
    assert cfg.get("START") == "KeyboardIdle > 60 && true"
    assert cfg.get("UNDEFINED_KNOB") is None
    assert cfg.get("SUBSYSTEM") == "STARTD"
    assert cfg.get_bool("MY_START") is True
    assert measure.calls == 0


def test_a_knob_that_depends_on_a_fact_measures_once() -> None:
    cfg, measure = _lazy()
    assert cfg.get("NAMED") == "slot-ep1"
    assert cfg.get_int("SLOTS") == 8
    assert cfg.get("DETECTED_MEMORY") == "16000"
    assert measure.calls == 1


def test_lazy_and_measured_facts_read_alike() -> None:
    facts = replace(FACTS, extra={"OPSYSANDVER": "Debian12"})
    lazy, _ = _lazy(facts)
    eager = Config.from_text(TEXT, source="t.conf", detected=facts, seed=7)
    assert lazy.names() == eager.names()
    assert lazy.items() == eager.items()
    assert lazy.get("OPSYSANDVER") == "Debian12"
    # an address the host lacks stays undefined, measured or not
    assert lazy.get("IPV6_ADDRESS") is None and eager.get("IPV6_ADDRESS") is None


def test_a_dump_measures() -> None:
    cfg, measure = _lazy()
    assert ("DETECTED_CPUS", "8") in cfg.items("^DETECTED_CPUS$")
    assert measure.calls == 1
