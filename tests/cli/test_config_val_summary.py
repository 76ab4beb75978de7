"""``config-val -summary`` and ``config-val -config`` print what condor_config_val
-summary and -config print for the same files (HTCondor 23.9.6, run on the files
below; only the version comment differs)."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from condorpy.cli.main import main
from condorpy.config import Config
from condorpy.config.summary import changed_settings, matches_default


def _cli(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "d"
    d.mkdir()
    main_file = tmp_path / "condor_config"
    main_file.write_text(
        f"LOCAL_CONFIG_DIR = {d}\nLOCAL_CONFIG_FILE = {tmp_path}/local\n"
        "REQUIRE_LOCAL_CONFIG_FILE = false\nSTART = TRUE\nNUM_CPUS = 2\n"
        "MAX_JOBS_RUNNING = 10\nFOO @=end\n  a\n  b\n@end\nEMPTY =\n"
        f"include : {tmp_path}/inc\nAFTER = 1\n")
    (tmp_path / "inc").write_text("INC_KNOB = yes\n")
    (d / "10-x.config").write_text("use ROLE : Personal\nCONDOR_HOST = 127.0.0.1\n"
                                   "SUSPEND = False\n")
    (d / "20-y.config").write_text("NUM_CPUS = 4\n")
    for var in [v for v in os.environ if v.startswith("_CONDOR_")]:
        monkeypatch.delenv(var)
    return main_file


def test_summary_groups_the_changed_settings_by_source(conf: Path) -> None:
    rc, out, err = _cli("config-val", "-config", str(conf), "-summary")
    assert (rc, err) == (0, "")
    head, _, rest = out.partition("\n")
    assert head.startswith("# condorpy config-val ")
    t = conf.parent
    # what condor_config_val -summary printed for these files
    assert rest == (
        f"\n#\n# from {conf}\n#\n"
        f"LOCAL_CONFIG_DIR = {t}/d\nLOCAL_CONFIG_FILE = {t}/local\n"
        "REQUIRE_LOCAL_CONFIG_FILE = false\nMAX_JOBS_RUNNING = 10\n"
        "FOO @=end\n   a\n   b\n@end\nEMPTY = \nAFTER = 1\n"
        f"\n#\n# from {t}/inc\n#\nINC_KNOB = yes\n"
        f"\n#\n# from {t}/d/10-x.config\n#\n"
        "COLLECTOR_HOST = $(CONDOR_HOST):0\n"
        "DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR STARTD SCHEDD\n"
        "RunBenchmarks = 0\nCONDOR_HOST = 127.0.0.1\n"
        f"\n#\n# from {t}/d/20-y.config\n#\nNUM_CPUS = 4\n")


def test_summary_puts_the_environment_last(conf: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_CONDOR_FROM_ENV", "1")
    out = _cli("config-val", "-config", str(conf), "-summary")[1]
    assert out.endswith("\n#\n# from <Environment>\n#\nFROM_ENV = 1\n")


def test_which_settings_say_what_their_default_says() -> None:
    assert matches_default("TRUE", "True") and matches_default("false", "FALSE")
    assert not matches_default("/Usr", "/usr")
    assert matches_default("", "") and not matches_default("", None)
    assert not matches_default("x", None)
    cfg = Config.from_mapping({"START": "true", "STARTD.START": "True", "X": "1"},
                              source="m")
    assert [(s, [e.name for e in es]) for s, es in changed_settings(cfg)] == [("m", ["X"])]


def test_config_lists_the_files_read_in_order(conf: Path) -> None:
    rc, out, err = _cli("config-val", "-root-config", str(conf), "-config")
    t = conf.parent
    # the files on stdout (one a line, after a tab), the headings on stderr
    assert (rc, out) == (0, f"\t{conf}\n\t{t}/inc\n\t{t}/d/10-x.config\n"
                            f"\t{t}/d/20-y.config\n\t{t}/local\n")
    assert err == "Configuration source:\nLocal configuration sources:\n\n"


def test_config_before_a_knob_name_lists_and_prints_it(conf: Path,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setenv("CONDOR_CONFIG", str(conf))
    rc, out, _ = _cli("config-val", "-config", "MAX_JOBS_RUNNING")
    assert rc == 0 and out.startswith(f"\t{conf}\n") and out.endswith("\n10\n")
    # a path after -config is still the file to read
    assert _cli("config-val", "-config", str(conf), "MAX_JOBS_RUNNING")[1] == "10\n"
    rc, out, err = _cli("config-val", "-config", str(conf.parent / "missing"), "X")
    assert rc != 0 and "missing" in err


def test_one_main_file_and_nothing_else(tmp_path: Path) -> None:
    only = tmp_path / "only"
    only.write_text("LOCAL_CONFIG_DIR =\nLOCAL_CONFIG_FILE =\n")
    rc, out, err = _cli("config-val", "-root-config", str(only), "-config")
    assert (rc, out, err) == (0, f"\t{only}\n", "Configuration source:\n")
    # a file to read and the list at once; -config before another option lists too
    assert _cli("config-val", "-config", str(only), "-config")[1] == f"\t{only}\n"
    rc, out, _ = _cli("config-val", "-root-config", str(only), "-config", "-summary")
    assert rc == 0 and out.startswith(f"\t{only}\n")
