"""Which changed knobs take a restart, and the reply `condorpy reconfig` reads."""

from __future__ import annotations

from condorpy.startd.reconfig_report import ReconfigReport, needs_restart


def test_knobs_read_when_the_machine_is_measured_need_a_restart() -> None:
    changed = {"NUM_CPUS", "MEMORY", "MACHINE_RESOURCE_GPUs",
               "MACHINE_RESOURCE_INVENTORY_GPUs", "GPU_DISCOVERY_EXTRA",
               "STARTD_DETECT_GPUS", "SLOT2_EXECUTE", "LOCAL_DIR", "RESERVED_DISK"}
    assert needs_restart(changed, False, False) == sorted(changed)


def test_knobs_the_daemon_applies_live_do_not() -> None:
    live = {"START", "PREEMPT", "NUM_SLOTS_TYPE_1", "SLOT_TYPE_1",
            "SLOT_TYPE_1_PARTITIONABLE", "NUM_SLOTS", "POLLING_INTERVAL",
            "STARTD_CRON_JOBLIST", "CONDORPY_METRICS_ADDRESS", "COLLECTOR_HOST"}
    assert needs_restart(live, True, True) == []
    assert needs_restart(live, False, False) == []


def test_joining_or_leaving_a_pool_and_its_port_need_a_restart() -> None:
    assert needs_restart({"COLLECTOR_HOST"}, False, True) == ["COLLECTOR_HOST"]
    assert needs_restart({"COLLECTOR_HOST"}, True, False) == ["COLLECTOR_HOST"]
    assert needs_restart({"STARTD_PORT", "NETWORK_INTERFACE"}, True, True) == \
        ["NETWORK_INTERFACE", "STARTD_PORT"]
    assert needs_restart({"STARTD_PORT"}, False, False) == []


def test_the_reply_round_trips_and_an_older_daemons_list_reads() -> None:
    report = ReconfigReport(("MEMORY", "START"), ("MEMORY",), "new slot layout in place")
    assert ReconfigReport.from_reply(report.to_reply()) == report
    assert ReconfigReport.from_reply(["START"]) == ReconfigReport(("START",))
    said = report.restart_line()
    assert said is not None and said.startswith("MEMORY changed") and \
        "condorpy restart" in said
    assert ReconfigReport(("START",)).restart_line() is None
