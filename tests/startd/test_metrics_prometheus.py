"""The metrics with the real tools: promtool on the rules and on the endpoint's output,
every PromQL expression of the dashboard and the rules checked against the series the
daemon exports, and a real Prometheus scraping a real daemon while jobs run."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from condorpy.clock import ManualClock
from condorpy.config import Config
from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
from condorpy.startd.core import Core
from condorpy.startd.metrics import Metrics, scrape_text
from tests.startd.daemon_helpers import Daemon, counts, running, submit, wait_for
from tests.startd.prometheus_tools import ensure_prometheus

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "packaging" / "prometheus" / "condorpy-rules.yml"
RULES_TEST = ROOT / "packaging" / "prometheus" / "condorpy-rules.test.yml"
DASHBOARD = ROOT / "packaging" / "grafana" / "condorpy-dashboard.json"

RULES_COUNT = 11
# PromQL words that are not series names.
_PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                 "group_right", "bool", "offset", "inf", "nan"}


def _exported_names() -> set[str]:
    """Every sample name a scrape of the daemon gives, with every optional series
    present (GPUs, custom resources, owner activity, a cron job, a pool link)."""
    text = ("NUM_CPUS = 4\nMEMORY = 4096\nDISK = 100000\nRUNBENCHMARKS = False\n"
            "MACHINE_RESOURCE_GPUs = 1\nMACHINE_RESOURCE_Widgets = 1\n"
            "STARTD_CRON_JOBLIST = temps\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\n"
            "SLOT_TYPE_1_PARTITIONABLE = True\n")
    cfg = Config.from_text(text, source="<test>", env={}, detected=VIRTUAL_DETECTED)
    clock = ManualClock(0.0)
    eng = Core(cfg, virtual_inventory(cfg)).engine(clock)
    m = Metrics.from_config(cfg, eng, clock)
    m.owner_activity(1, 1, 0.0)
    pool = SimpleNamespace(advertiser=SimpleNamespace(updates_sent=0, failures=0),
                           table=[], reconnects=SimpleNamespace(reconnected=0))
    m.attach(None, pool)  # type: ignore[arg-type]
    m.publish(0.0)
    names = {s.name for fam in text_string_to_metric_families(scrape_text(m.registry))
             for s in fam.samples}
    return names | {"up"}        # Prometheus's own, per target


def _series_in(expr: str) -> set[str]:
    """The series names a PromQL expression reads."""
    e = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)           # strings
    e = re.sub(r"\{[^}]*\}", " ", e)                         # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                        # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    out = set()
    for m in re.finditer(r"(?<![\w$.])([A-Za-z_:][\w:]*)\s*(\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in _PROMQL_WORDS:
            continue
        out.add(word)
    return out


def _dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            q = var["query"]
            inner = re.fullmatch(r"label_values\((\w+)\s*,\s*\w+\)",
                                 q["query"] if isinstance(q, dict) else q)
            assert inner, q
            exprs.append(inner.group(1))
    return exprs


def _rule_exprs() -> list[str]:
    # The rules file is YAML; its exprs are one-line or folded (">") scalars.
    lines = RULES.read_text().splitlines()
    exprs, i = [], 0
    while i < len(lines):
        m = re.match(r"(\s*)expr:\s*(.*)$", lines[i])
        if m:
            if m.group(2).strip() in (">", "|"):
                block, indent = [], len(m.group(1))
                i += 1
                while i < len(lines) and (not lines[i].strip() or
                                          len(lines[i]) - len(lines[i].lstrip()) > indent):
                    block.append(lines[i].strip())
                    i += 1
                exprs.append(" ".join(block))
                continue
            exprs.append(m.group(2))
        i += 1
    return exprs


def test_every_promql_expression_reads_only_exported_series() -> None:
    exported = _exported_names()
    exprs = _dashboard_exprs() + _rule_exprs()
    assert len(_rule_exprs()) == RULES_COUNT and len(_dashboard_exprs()) >= 16
    used: set[str] = set()
    for expr in exprs:
        names = _series_in(expr)
        assert names, f"no series found in {expr!r}"
        missing = names - exported
        assert not missing, f"{expr!r} reads {sorted(missing)}, which the daemon does not export"
        used |= names
    # The dashboard's panels cover what the issue asks for.
    for needed in ("condorpy_slots", "condorpy_cpus", "condorpy_memory_bytes",
                   "condorpy_jobs_started_total", "condorpy_job_holds_total",
                   "condorpy_policy_cycle_duration_seconds_bucket",
                   "condorpy_keyboard_idle_seconds", "condorpy_queue_jobs",
                   "condorpy_policy_evaluation_errors_total", "condorpy_reconfigs_total",
                   "condorpy_cgroup_limits_enforced", "condorpy_pool_collector_updates_total",
                   "condorpy_pool_claims", "condorpy_cron_failures_total",
                   "condorpy_hook_failures_total"):
        assert needed in used


def test_the_expression_checker_catches_a_wrong_name() -> None:
    assert _series_in('sum by (state) (rate(condorpy_slotz{state="Claimed"}[5m])) > 0') \
        == {"condorpy_slotz"}
    assert _series_in("time() - condorpy_x offset 5m and on(instance) up") == \
        {"condorpy_x", "up"}


def test_promtool_check_and_test_rules() -> None:
    _, promtool = ensure_prometheus()
    res = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {RULES_COUNT} rules found" in res.stdout
    res = subprocess.run([promtool, "test", "rules", RULES_TEST.name], capture_output=True,
                         text=True, timeout=60, cwd=RULES_TEST.parent)
    assert res.returncode == 0, res.stdout + res.stderr
    # Every alert of the rules file is exercised by the test file.
    alerts = set(re.findall(r"^\s*- alert:\s*(\w+)", RULES.read_text(), re.M))
    tested = set(re.findall(r"alertname:\s*(\w+)", RULES_TEST.read_text()))
    assert alerts == tested and len(alerts) == RULES_COUNT
    # ... and seen firing, not only quiet
    fired = set(re.findall(r"alertname:\s*(\w+)\n\s*exp_alerts:\n\s*- exp_labels",
                           RULES_TEST.read_text()))
    assert fired == alerts


# --- a real daemon scraped by a real Prometheus --------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def _query(port: int, expr: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    body = json.loads(_get(url))
    assert body["status"] == "success", body
    return body["data"]["result"]  # type: ignore[no-any-return]


def _value(port: int, expr: str) -> float | None:
    res = _query(port, expr)
    return float(res[0]["value"][1]) if len(res) == 1 else None


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path / "ep", cpus=2,
                        extra="NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\n"
                              "SLOT_TYPE_1_PARTITIONABLE = True\n")) as d:
        yield d


def test_prometheus_scrapes_the_daemon(daemon: Daemon, tmp_path: Path) -> None:
    prometheus, promtool = ensure_prometheus()
    host, port = daemon.call("ping")["metrics"]
    assert host == "127.0.0.1"
    # promtool's lint of the endpoint's own output: no problem reported.
    text = _get(f"http://127.0.0.1:{port}/metrics")
    res = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0 and not res.stdout.strip() and not res.stderr.strip(), \
        res.stdout + res.stderr

    prom_port = _free_port()
    conf = tmp_path / "prometheus.yml"
    conf.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files:\n  - {RULES}\n"
        "scrape_configs:\n  - job_name: condorpy\n    scrape_interval: 1s\n"
        f"    scrape_timeout: 1s\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{port}']\n")
    log = open(tmp_path / "prometheus.log", "wb")
    prom = subprocess.Popen([prometheus, f"--config.file={conf}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    log.close()

    def prom_log() -> str:
        return (tmp_path / "prometheus.log").read_text()[-3000:]
    try:
        def up() -> bool:
            try:
                return _value(prom_port, 'up{job="condorpy"}') == 1.0
            except OSError:
                return False
        wait_for(up, 60, prom_log)
        work = tmp_path / "work"
        work.mkdir()
        # Three jobs that end at once and two that keep both CPUs busy.
        submit(daemon, "executable = /bin/true\nrequest_memory = 16\nqueue 3\n", work)
        wait_for(lambda: counts(daemon).get(4) == 3, 60, daemon.output)
        submit(daemon, "executable = /bin/sleep\narguments = 120\nrequest_memory = 16\n"
                       "queue 2\n", work)
        wait_for(lambda: counts(daemon).get(2) == 2, 60, daemon.output)

        def seen() -> bool:
            return _value(prom_port, 'condorpy_jobs_started_total{job="condorpy"}') == 5.0 \
                and _value(prom_port, 'sum(condorpy_slots{state="Claimed",'
                                      'activity="Busy",type="dynamic"})') == 2.0
        wait_for(seen, 30, lambda: f"{_query(prom_port, 'condorpy_jobs_started_total')}; "
                                   f"{_query(prom_port, 'condorpy_slots > 0')}")
        assert _value(prom_port, 'condorpy_jobs_exited_total{outcome="completed"}') == 3.0
        assert _value(prom_port, 'condorpy_cpus{state="Claimed"}') == 2.0
        assert _value(prom_port, 'condorpy_cpus{state="Unclaimed"}') == 0.0
        assert _value(prom_port, 'condorpy_machine_cpus') == 2.0
        assert _value(prom_port, 'condorpy_starters') == 2.0
        # Measured for every job whose starter the daemon reached while the job ran:
        # the two sleepers at least (a /bin/true may be over before that).
        assert 2.0 <= (_value(prom_port, 'condorpy_job_start_latency_seconds_count')
                       or 0) <= 5.0
        assert (_value(prom_port, 'condorpy_policy_cycle_duration_seconds_count') or 0) > 0
        assert _value(prom_port, 'condorpy_build_info') == 1.0
        # The local queue by JobStatus (counted every few seconds), cgroup enforcement
        # for each controller (1 or 0, as this machine allows), no pool series.
        wait_for(lambda: _value(prom_port, 'condorpy_queue_jobs{status="Running"}') == 2.0,
                 30, lambda: str(_query(prom_port, "condorpy_queue_jobs")))
        assert _value(prom_port, 'condorpy_queue_jobs{status="Held"}') == 0.0
        assert len(_query(prom_port, "condorpy_cgroup_limits_enforced")) == 3
        assert _query(prom_port, "condorpy_pool_claims") == []
        assert _value(prom_port, 'condorpy_last_reconfig_successful') == 1.0
        daemon.cli("reconfig")
        wait_for(lambda: _value(prom_port,
                                'condorpy_reconfigs_total{result="succeeded"}') == 1.0,
                 30, lambda: str(_query(prom_port, "condorpy_reconfigs_total")))
        states = {r["metric"]["state"]: float(r["value"][1]) for r in
                  _query(prom_port, 'sum by (state) (condorpy_slots)')}
        assert states["Claimed"] == 2.0 and states["Unclaimed"] == 1.0
        assert states["Owner"] == 0.0 and states["Preempting"] == 0.0
        # The rules loaded into the server evaluate, and nothing fires on a healthy EP.
        rules = json.loads(_get(f"http://127.0.0.1:{prom_port}/api/v1/rules"))
        rule_list = [r for g in rules["data"]["groups"] for r in g["rules"]]
        assert len(rule_list) == RULES_COUNT and \
            all(r["health"] != "err" for r in rule_list), rule_list
        assert _query(prom_port, 'ALERTS{alertstate="firing"}') == []
        # Holding a running job shows up as a hold by code 1 and an exit as held.
        daemon.cli("hold", "2.0")
        wait_for(lambda: _value(prom_port, 'condorpy_job_holds_total{code="1"}') == 1.0
                 and _value(prom_port, 'condorpy_jobs_exited_total{outcome="held"}') == 1.0,
                 30, lambda: str(_query(prom_port, "condorpy_job_holds_total")))
        # A refused reconfig is counted, and the rule loaded into Prometheus fires.
        good = daemon.config.read_text()
        daemon.config.write_text(good + "START = (\n")
        assert daemon.cli("reconfig", check=False).returncode != 0
        wait_for(lambda: _query(prom_port, 'ALERTS{alertname="CondorpyReconfigFailed",'
                                           'alertstate="firing"}') != [],
                 60, lambda: str(_query(prom_port, "condorpy_reconfigs_total")))
        assert _value(prom_port, 'condorpy_reconfigs_total{result="failed"}') == 1.0
        daemon.config.write_text(good)
        daemon.cli("reconfig")
        wait_for(lambda: _value(prom_port, "condorpy_last_reconfig_successful") == 1.0,
                 30, lambda: str(_query(prom_port, "condorpy_reconfigs_total")))
    finally:
        prom.terminate()
        try:
            prom.wait(30)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
