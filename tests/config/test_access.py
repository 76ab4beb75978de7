"""Look-up order, typed access, per-slot knobs, computed knobs and re-reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.config import Config, load_config
from condorpy.errors import ConfigError
from tests.config.helpers import FACTS, cfg


def test_prefix_order_for_subsystem_and_localname() -> None:
    text = ("X = plain\nSTARTD.X = subsys\nEP2.X = local\nSTARTD.EP2.X = both\n"
            "Y = plain\nEP2.Y = local\nZ = plain\nSTARTD.Z = subsys\n")
    with_local = cfg(text, localname="EP2")
    assert with_local.get("X") == "both"
    assert with_local.get("Y") == "local"
    assert with_local.get("Z") == "subsys"
    starter = cfg(text, subsystem="STARTER")
    assert starter.get("X") == "plain" and starter.get("Z") == "plain"


def test_prefixed_lookup_applies_inside_macros() -> None:
    c = cfg("HighLoad = 0.5\nSTARTD.HighLoad = 0.9\nA = $(HighLoad)\n")
    assert c.get("A") == "0.9"
    assert cfg("HighLoad = 0.5\nSTARTD.HighLoad = 0.9\nA = $(HighLoad)\n",
               subsystem="SCHEDD").get("A") == "0.5"


def test_slot_get_order() -> None:
    c = cfg("START = base\nSLOT_TYPE_2_START = type2\nSLOT3_START = slot3\n")
    assert c.slot_get("START", 3, 2) == "slot3"
    assert c.slot_get("START", 4, 2) == "type2"
    assert c.slot_get("START", 4, 1) == "base"
    assert c.slot_get("NOPE", 1, None, default="d") == "d"


def test_typed_values() -> None:
    c = cfg("I = 5 * 60\nF = 0.5\nB1 = TRUE\nB2 = 0\nL = a, b  c,,d\nD1 = 5m\nD2 = 90\n"
            "D3 = 2h\nE =\n")
    assert c.get_int("I") == 300
    assert c.get_float("F") == 0.5
    assert c.get_bool("B1") is True and c.get_bool("B2") is False
    assert c.get_list("L") == ["a", "b", "c", "d"]
    assert c.get_duration("D1") == 300 and c.get_duration("D2") == 90
    assert c.get_duration("D3") == 7200
    assert c.get_int("NOPE", 7) == 7
    assert c.get_int("NOPE") is None
    assert c.get_list("NOPE") == []


def test_empty_typed_value_falls_back_to_builtin_default() -> None:
    c = cfg("CLAIM_WORKLIFE =\n")
    assert c.get("CLAIM_WORKLIFE") is None
    assert c.get_int("CLAIM_WORKLIFE") == 1200


def test_empty_value_hides_the_builtin_default_from_get() -> None:
    # HTCondor's param() finds the empty value and answers undefined; only the typed
    # look-ups fall back to the table
    c = cfg("STARTER_LOG =\nUPDATE_INTERVAL = $(NOPE)\nENABLE_BACKFILL =\n")
    assert c.get("STARTER_LOG") is None and c.get("UPDATE_INTERVAL") is None
    assert c.where("STARTER_LOG") == ("test.conf", 1)
    assert c.raw("UPDATE_INTERVAL") == "$(NOPE)"
    assert c.get_int("UPDATE_INTERVAL") == 300
    assert c.get_bool("ENABLE_BACKFILL") is False
    assert c.get_int("UPDATE_INTERVAL", 7) == 7  # the caller's default comes first


def test_ip_addresses_by_protocol() -> None:
    from dataclasses import replace
    c = cfg("A = $(IPV4_ADDRESS)|$(IPV6_ADDRESS)\n")
    assert c.get("IPV4_ADDRESS") == "192.0.2.10" and c.get("IPV6_ADDRESS") is None
    assert c.get("A") == "192.0.2.10|"
    both = Config.from_text("", detected=replace(FACTS, ipv6_address="2001:db8::10"))
    assert both.get("IPV6_ADDRESS") == "2001:db8::10"
    only6 = Config.from_text("", detected=replace(FACTS, ip_address="2001:db8::10"))
    assert only6.get("IPV4_ADDRESS") is None


def test_code_defaults_for_knobs_htcondor_leaves_undefined() -> None:
    c = cfg("")
    assert not c.is_defined("STARTER_ALLOW_RUNAS_OWNER")
    assert c.get_bool("STARTER_ALLOW_RUNAS_OWNER") is True
    assert c.get_int("MAXJOBRETIREMENTTIME") == 0


def test_bad_integer_names_file_and_line() -> None:
    c = cfg("A = 1\nB = 2\nPOLLING_INTERVAL = abc\n")
    with pytest.raises(ConfigError) as info:
        c.get_int("POLLING_INTERVAL")
    assert str(info.value) == "POLLING_INTERVAL = abc at test.conf:3 is not an integer"
    assert (info.value.file, info.value.line) == ("test.conf", 3)
    with pytest.raises(ConfigError, match="is not a boolean"):
        cfg("X = maybe\n").get_bool("X")
    with pytest.raises(ConfigError, match="is not an integer"):
        cfg("X = 2 apples\n").get_int("X")
    # HTCondor truncates a real value read as an integer
    assert cfg("X = 2.5\n").get_int("X") == 2


def test_computed_knobs_come_from_the_facts() -> None:
    c = cfg("A = $(HOSTNAME)/$(DETECTED_CPUS)/$(DETECTED_MEMORY)\n")
    assert c.get("FULL_HOSTNAME") == "ep1.example.org"
    assert c.get("A") == "ep1/8/16000"
    assert c.get_int("NUM_CPUS") == 8
    assert c.get("SUBSYSTEM") == "STARTD"


def test_defaults_and_paths() -> None:
    c = cfg("LOCAL_DIR = /var/lib/condorpy\n")
    assert c.get("EXECUTE") == "/var/lib/condorpy/execute"
    assert c.get("STARTD_LOG") == "/var/lib/condorpy/log/StartLog"
    assert c.get_int("UPDATE_INTERVAL") == 300
    assert c.where("EXECUTE") is None and c.where("LOCAL_DIR") == ("test.conf", 1)


def test_random_values_are_fixed_per_reading() -> None:
    c = cfg("R = $RANDOM_INTEGER(0, 1000000)\nA = $(R)\n", seed=3)
    assert c.get("R") == c.get("R") == c.get("A")
    assert 0 <= int(c.get("R") or "-1") <= 1000000
    assert cfg("R = $RANDOM_INTEGER(0, 1000000)\n", seed=3).get("R") == c.get("R")
    step = cfg("R = $RANDOM_INTEGER(10, 20, 5)\n").get("R")
    assert step in {"10", "15", "20"}


def test_typed_values_that_need_classad_evaluation() -> None:
    pytest.importorskip("condorpy.classad", reason="the ClassAd layer does not import")
    c = cfg("T = true\nB = $(T) && !false\nI = ifThenElse(true, 7, 8)\nX = Owner == 1\n")
    assert c.get_bool("B") is True
    assert c.get_int("I") == 7
    with pytest.raises(ConfigError, match="is not a boolean"):
        c.get_bool("X")   # refers to an attribute: not a constant


def test_get_expr_parses_classad() -> None:
    pytest.importorskip("condorpy.classad", reason="the ClassAd layer does not import")
    c = cfg("START = (KeyboardIdle > $(MINUTE)) && TARGET.x == 1\n")
    expr = c.get_expr("START")
    assert expr is not None
    assert "KeyboardIdle" in str(expr)


def test_names_and_items() -> None:
    c = cfg("MyKnob = $(UPDATE_INTERVAL)\n")
    assert "MyKnob" in c.names() and "UPDATE_INTERVAL" in c.names()
    assert c.items("^mykn") == [("MyKnob", "300")]


def test_env_overrides_win(tmp_path: Path) -> None:
    main = tmp_path / "c"
    main.write_text("A = file\n")
    c = load_config(str(main), env={"_CONDOR_A": "env", "_CONDOR_B": "$(A)!"}, detected=FACTS)
    assert c.get("A") == "env" and c.get("B") == "env!"
    assert c.where("A") == ("environment (_CONDOR_A)", 0)


def test_condor_config_env_chooses_the_file(tmp_path: Path) -> None:
    main = tmp_path / "c"
    main.write_text("A = chosen\n")
    assert load_config(env={"CONDOR_CONFIG": str(main)}, detected=FACTS).get("A") == "chosen"


def test_local_config_dir_order_and_exclusions(tmp_path: Path) -> None:
    d = tmp_path / "config.d"
    d.mkdir()
    (d / "20-b").write_text("ORD = $(ORD) b\n")
    (d / "10-a").write_text("ORD = $(ORD) a\n")
    (d / "15-x.rpmsave").write_text("ORD = $(ORD) rpmsave\n")
    (d / ".hidden").write_text("ORD = $(ORD) hidden\n")
    main = tmp_path / "c"
    main.write_text(f"LOCAL_CONFIG_DIR = {d}\nORD = base\n")
    c = load_config(str(main), env={}, detected=FACTS)
    assert c.get("ORD") == "base a b"
    assert c.where("ORD") == (str(d / "20-b"), 1)


def test_reload_reports_changed_knobs(tmp_path: Path) -> None:
    main = tmp_path / "c"
    main.write_text("A = 1\nB = $(A) x\nC = same\n")
    first = load_config(str(main), env={}, detected=FACTS)
    main.write_text("A = 2\nB = $(A) x\nC = same\nD = new\n")
    second, changed = first.reload()
    assert changed == {"A", "B", "D"}
    assert second.get("B") == "2 x" and first.get("B") == "1 x"


def test_from_text_cannot_reload_a_file_it_never_read() -> None:
    c = Config.from_text("A = 1\n", detected=FACTS)
    new, changed = c.reload()
    assert changed == set() and new.get("A") == "1"


def test_include_command_into_cache(tmp_path: Path) -> None:
    cache = tmp_path / "Cache.conf"
    text = f"include command into {cache} : /bin/echo CACHED = first\n"
    assert cfg(text).get("CACHED") == "first"
    assert cache.read_text() == "CACHED = first\n"
    cache.write_text("CACHED = from cache\n")
    # an existing cache is read instead of running the command again
    assert cfg(text).get("CACHED") == "from cache"


def test_template_argument_forms() -> None:
    c = cfg("use FEATURE : StartdCronPeriodic(probe, 5m, /bin/probe, -a -b)\n"
            "use FEATURE : StaticSlots(3)\n")
    assert c.get("STARTD_CRON_JOBLIST") == " probe"   # HTCondor keeps the space
    assert c.get_list("STARTD_CRON_JOBLIST") == ["probe"]
    assert c.get("STARTD_CRON_probe_PERIOD") == "5m"
    assert c.get("STARTD_CRON_probe_ARGS") == "-a -b"
    assert c.get("NUM_SLOTS_TYPE_3") == "8"          # $(2:$(NUM_CPUS))
    assert c.get("SLOT_TYPE_3") is None              # $(3+) with no third argument
    assert c.where("STARTD_CRON_probe_MODE") == ("test.conf", 1)


def test_get_expr_reports_a_bad_expression_with_its_place() -> None:
    pytest.importorskip("condorpy.classad", reason="the ClassAd layer does not import")
    c = cfg("A = 1\nSTART = (KeyboardIdle > \n")
    with pytest.raises(ConfigError) as info:
        c.get_expr("START")
    assert str(info.value).startswith("START = (KeyboardIdle > at test.conf:2 is not a ClassAd")
    assert c.get_expr("NOPE", "1 + 1") is not None
