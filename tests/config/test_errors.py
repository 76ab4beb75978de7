"""Bad configuration gets one clear ConfigError naming file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.config import load_config
from condorpy.errors import ConfigError
from tests.config.helpers import FACTS, cfg


def _error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        c = cfg(text)
        c.get("A")
    return info.value


def test_unterminated_block_names_its_first_line() -> None:
    err = _error("X = 1\nA @=end\n  one\n  two\n")
    assert (err.file, err.line) == ("test.conf", 2)
    assert "@end" in str(err) and "test.conf, line 2" in str(err)


def test_if_without_endif() -> None:
    err = _error("A = 1\nif true\nB = 2\n")
    assert (err.file, err.line) == ("test.conf", 2)
    assert "endif" in str(err)


def test_endif_without_if() -> None:
    err = _error("A = 1\nendif\n")
    assert err.line == 2 and "without a matching if" in str(err)


def test_else_after_else() -> None:
    err = _error("if true\nelse\nelse\nendif\n")
    assert err.line == 3


def test_complex_condition_is_refused() -> None:
    err = _error("if 1 == 1\nA = 1\nendif\n")
    assert err.line == 1 and "not a valid if condition" in str(err)


def test_version_needs_major_and_minor() -> None:
    err = _error("if version > 30\nA = 1\nendif\n")
    assert err.line == 1 and "version" in str(err)


def test_recursive_macros_name_the_definition() -> None:
    c = cfg("X = 1\nA = $(B) x\nB = $(C)\nC = $(A)\n")
    with pytest.raises(ConfigError) as info:
        c.get("A")
    assert (info.value.file, info.value.line) == ("test.conf", 2)
    assert "A -> B -> C -> A" in str(info.value)


def test_self_reference_is_not_recursion() -> None:
    assert cfg("A = 1\nA = $(A) 2\n").get("A") == "1 2"


def test_unknown_template() -> None:
    err = _error("\n\nuse POLICY : No_Such_Policy\n")
    assert err.line == 3
    assert "POLICY:No_Such_Policy" in str(err) and "DESKTOP" in str(err)


def test_error_directive_inside_template_points_at_use_line() -> None:
    err = _error("A = 1\nuse POLICY : Preempt_If\n")
    assert (err.file, err.line) == ("test.conf", 2)
    assert "requires an argument" in str(err)


def test_error_and_warning_directives() -> None:
    err = _error("A = 1\nerror : stop here $(A)\n")
    assert "stop here 1" in str(err) and err.line == 2
    c = cfg("A = 1\nwarning : careful $(A)\n")
    assert c.warnings == ["test.conf:2: careful 1"]


def test_garbage_line() -> None:
    err = _error("A = 1\nthis is not config\n")
    assert err.line == 2


def test_include_cycle(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text(f"include : {b}\n")
    b.write_text(f"X = 1\ninclude : {a}\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(a), env={}, detected=FACTS)
    assert info.value.file == str(b) and info.value.line == 2
    assert "cycle" in str(info.value)


def test_missing_main_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "nope"), env={}, detected=FACTS)


def test_missing_include_names_the_includer(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.write_text(f"A = 1\ninclude : {tmp_path / 'gone'}\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(main), env={}, detected=FACTS)
    assert (info.value.file, info.value.line) == (str(main), 2)


def test_missing_local_config_file_is_an_error_unless_not_required(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.write_text(f"LOCAL_CONFIG_FILE = {tmp_path / 'gone'}\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(main), env={}, detected=FACTS)
    assert info.value.file == str(main) and info.value.line == 1
    main.write_text(f"REQUIRE_LOCAL_CONFIG_FILE = false\nLOCAL_CONFIG_FILE = {tmp_path / 'gone'}\n")
    assert load_config(str(main), env={}, detected=FACTS).get("LOCAL_CONFIG_FILE")


def test_failing_include_command() -> None:
    err = _error("include command : /bin/false\n")
    assert err.line == 1 and "status 1" in str(err)


def test_cli_reports_one_line_without_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys
    bad = tmp_path / "bad"
    bad.write_text("A = 1\nif true\n")
    r = subprocess.run([sys.executable, "-m", "condorpy", "config-val", "-config", str(bad), "A"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert f"at {bad}, line 2" in r.stderr
