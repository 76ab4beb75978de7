"""The policy's timing knobs are read once, by policy/settings.py, and defaulted once,
by the configuration's built-in table: the engine's settings carry them for every other
part of the daemon to read."""

from __future__ import annotations

import dataclasses

import pytest

from condorpy.config import Config
from condorpy.config.defaults import CODE_DEFAULTS, PARAM_DEFAULTS
from condorpy.errors import ConfigError
from condorpy.machine.virtual import VIRTUAL_DETECTED
from condorpy.policy.settings import TIMING_KNOBS, PolicySettings, settings_from_config
from tests.policy.engines import engine_from_text


def _builtin(name: str) -> str:
    return PARAM_DEFAULTS.get(name) or CODE_DEFAULTS[name]


def _cfg(text: str) -> Config:
    return Config.from_text(text, source="test.conf", env={}, detected=VIRTUAL_DETECTED)


@pytest.mark.parametrize("knob", [*TIMING_KNOBS, "ENABLE_BACKFILL"])
def test_every_policy_knob_has_its_default_in_the_builtin_table(knob: str) -> None:
    assert _builtin(knob)


def test_unset_knobs_take_the_builtin_table_defaults() -> None:
    s = settings_from_config(_cfg(""))
    got = {k: getattr(s, k.lower()) for k in TIMING_KNOBS}
    assert got == {k: int(_builtin(k)) for k in TIMING_KNOBS}
    assert s.enable_backfill is False and _builtin("ENABLE_BACKFILL") == "false"


def test_a_knob_set_to_nothing_falls_back_to_the_table() -> None:
    s = settings_from_config(_cfg("POLLING_INTERVAL =\nKILLING_TIMEOUT = 12\n"))
    assert s.polling_interval == int(_builtin("POLLING_INTERVAL"))
    assert s.killing_timeout == 12


def test_a_bad_value_names_its_file_and_line() -> None:
    with pytest.raises(ConfigError) as info:
        settings_from_config(_cfg("A = 1\nUPDATE_INTERVAL = often\n"))
    assert str(info.value) == "UPDATE_INTERVAL = often at test.conf:2 is not an integer"


def test_the_settings_record_holds_no_default_of_its_own() -> None:
    # A default here would be a second one, drifting from the table's.
    fields = {f.name: f for f in dataclasses.fields(PolicySettings)}
    for knob in (*TIMING_KNOBS, "ENABLE_BACKFILL"):
        f = fields[knob.lower()]
        assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def test_the_engine_exposes_the_timing_knobs() -> None:
    eng = engine_from_text("POLLING_INTERVAL = 7\nUPDATE_INTERVAL = 90\nKILLING_TIMEOUT = 11\n")
    s = eng.settings
    assert (s.polling_interval, s.update_interval, s.killing_timeout) == (7, 90, 11)
    assert eng.poll_interval() == 7           # slots start in Owner: POLLING_INTERVAL
    eng.cycle(0)
    assert eng.poll_interval() == 90          # Unclaimed, nothing claimed: UPDATE_INTERVAL
