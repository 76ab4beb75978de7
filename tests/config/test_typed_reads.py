"""The one typed reader: HTCondor's rules for booleans and numbers, and one wording
for a bad value, naming the file and line (or the environment variable) that set it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.config import Config, KnobReader, load_config
from condorpy.config.typed import boolean_value, integer_value, number_value
from condorpy.errors import ConfigError
from tests.config.helpers import FACTS, cfg

TEXTS = [
    "true", "TRUE", "True", "false ", "FALSE", "1", "0", "1 ", "truex", "on", "off", "yes",
    "no", "T", "F", "t", "y", "n", "maybe", "10", "01", "00", "-1", "+1", "-0", "0.5",
    "2.7", "-2.7", "1e3", ".5", "5.", "0x10", "0x1p3", "inf", "nan", "1_000", "5 * 60",
    "7/2", "7.0/2", "true && false", "false || true", "!false", "True && 1", "3 > 2",
    "1 ? 2 : 3", "ifThenElse(true, 7, 8)", "int(2.9)", "real(3)", 'size("ab")',
    '"abc"', '"01"', "undefined", "error", "x", "x + 1", "1 +", "1 1", "true false",
    "(01)", "01 + 0", "00.5", "10/0", "1.5e300*1e300", "9999999999999", "isUndefined(x)",
]


def test_typed_parsing_agrees_with_htcondors_library() -> None:
    pytest.importorskip("htcondor2", reason="the HTCondor wheel is the reference")
    oracle = Path(__file__).with_name("typed_oracle.py")
    run = subprocess.run([sys.executable, str(oracle)], input=json.dumps(TEXTS),
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        pytest.skip(f"HTCondor's library could not be called: {run.stderr[-300:]}")
    differ = []
    for text, want in zip(TEXTS, json.loads(run.stdout)):
        got = {"bool": boolean_value(text), "int": integer_value(text),
               "float": number_value(text)}
        same_float = got["float"] == want["float"] or (
            got["float"] is not None and want["float"] is not None
            and math.isnan(got["float"]) and math.isnan(want["float"]))
        if got["bool"] != want["bool"] or got["int"] != want["int"] or not same_float:
            differ.append((text, got, want))
    assert not differ


def test_htcondor_boolean_spellings() -> None:
    c = cfg("A = true\nB = FALSE\nC = 1\nD = 0\nE = $(A) && true\nF = 10\nG = 0.0\n")
    assert [c.get_bool(n) for n in "ABCDEFG"] == [True, False, True, False, True, True, False]
    for spelling in ("on", "off", "yes", "no", "T", "F", "y", "n"):
        with pytest.raises(ConfigError, match="is not a boolean"):
            cfg(f"X = {spelling}\n").get_bool("X")


def test_integers_as_param_integer_reads_them() -> None:
    c = cfg("A = 15 * 60\nB = 2.7\nC = true\nD = ifThenElse($(A) > 60, 5, 6)\nE = -3\n")
    assert [c.get_int(n) for n in "ABCDE"] == [900, 2, 1, 5, -3]


BAD = [
    ("get_int", "abc", "an integer"),
    ("get_bool", "maybe", "a boolean"),
    ("get_float", "fast", "a number"),
    ("get_duration", "5 fortnights", "a duration"),
]


@pytest.mark.parametrize("getter,value,what", BAD)
def test_a_bad_value_names_file_and_line(getter: str, value: str, what: str) -> None:
    c = cfg(f"A = 1\n\nKNOB = {value}\n")
    with pytest.raises(ConfigError) as info:
        getattr(c, getter)("KNOB")
    assert str(info.value) == f"KNOB = {value} at test.conf:3 is not {what}"
    assert (info.value.file, info.value.line, info.value.name) == ("test.conf", 3, "KNOB")


@pytest.mark.parametrize("getter,value,what", BAD)
def test_a_bad_value_from_the_environment_names_the_variable(
        tmp_path: Path, getter: str, value: str, what: str) -> None:
    main = tmp_path / "condor_config"
    main.write_text("KNOB = 1\n")
    c = load_config(str(main), env={"_CONDOR_KNOB": value}, detected=FACTS)
    with pytest.raises(ConfigError) as info:
        getattr(c, getter)("KNOB")
    assert str(info.value) == f"KNOB = {value} at environment (_CONDOR_KNOB) is not {what}"


def test_a_bad_expression_names_file_and_line() -> None:
    c = cfg("A = 1\nSTART = (KeyboardIdle >\n")
    with pytest.raises(ConfigError) as info:
        c.get_expr("START")
    assert str(info.value).startswith(
        "START = (KeyboardIdle > at test.conf:2 is not a ClassAd expression (")


def test_a_bad_value_reached_through_a_macro_names_the_knob_read() -> None:
    c = cfg("BASE = lots\nNUM_SLOTS = $(BASE)\n")
    with pytest.raises(ConfigError) as info:
        c.get_int("NUM_SLOTS")
    assert str(info.value) == "NUM_SLOTS = lots at test.conf:2 is not an integer"


def test_from_mapping_goes_through_the_normal_path() -> None:
    c: KnobReader = Config.from_mapping({"NUM_CPUS": "4", "HALF": "$(NUM_CPUS) / 2",
                                         "FLAG": "on"}, source="<test>", detected=FACTS)
    assert c.get_int("HALF") == 2 and c.get("FULL_HOSTNAME") == "ep1.example.org"
    assert c.get_int("UPDATE_INTERVAL") == 300          # built-in defaults are there
    assert c.where("HALF") == ("<test>", 2)
    with pytest.raises(ConfigError) as info:
        c.get_bool("FLAG")
    assert str(info.value) == "FLAG = on at <test>:3 is not a boolean"


def test_command_line_overrides_win_and_say_so(tmp_path: Path) -> None:
    main = tmp_path / "condor_config"
    main.write_text("KNOB = 1\n")
    c = load_config(str(main), env={"_CONDOR_KNOB": "2"}, detected=FACTS,
                    overrides={"KNOB": "three"})
    with pytest.raises(ConfigError) as info:
        c.get_int("KNOB")
    assert str(info.value) == "KNOB = three at the command line (--set) is not an integer"


def test_slot_name_finds_the_knob_slot_get_reads() -> None:
    c = cfg("X = 1\nSLOT_TYPE_2_X = 2\nSLOT3_X = bad\n")
    assert c.slot_name("X", 4, 2) == "SLOT_TYPE_2_X" and c.slot_name("X", 4, 1) == "X"
    with pytest.raises(ConfigError, match=r"^SLOT3_X = bad at test.conf:3 is not an integer$"):
        c.get_int(c.slot_name("X", 3, 2))


def test_invalid_words_a_callers_own_check_the_same_way() -> None:
    c = cfg("A = 1\nPOLICY = strict\n")
    assert str(c.invalid("POLICY", "one of none, hard")) == \
        "POLICY = strict at test.conf:2 is not one of none, hard"
