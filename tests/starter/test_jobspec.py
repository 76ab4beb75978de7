from __future__ import annotations

import signal

import pytest

from condorpy.errors import JobAdError
from condorpy.starter.environment import gpu_visible_devices, job_environment
from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.jobspec import JobSpec, SlotSpec, kill_signal, parse_signal


def test_kill_signal_by_name_or_number() -> None:
    assert parse_signal("SIGUSR1") == signal.SIGUSR1
    assert parse_signal("hup") == signal.SIGHUP
    assert parse_signal(9) == 9
    assert parse_signal("15") == 15
    with pytest.raises(JobAdError, match="KillSig"):
        parse_signal("SIGNOPE")
    for not_a_signal in (999, "999", 0, -1, True, 2.5):
        with pytest.raises(JobAdError, match="KillSig"):
            parse_signal(not_a_signal)


def test_a_kill_sig_that_is_no_signal_becomes_sigterm_with_a_note() -> None:
    assert kill_signal(None) == (signal.SIGTERM, None)
    assert kill_signal("SIGUSR1") == (signal.SIGUSR1, None)
    job = JobSpec.from_ad({"Cmd": "/bin/true", "KillSig": 999})
    assert job.kill_sig == signal.SIGTERM
    assert job.kill_sig_note == "KillSig 999 is not a signal; using SIGTERM"


def test_missing_cmd_is_a_hold_with_code_6() -> None:
    with pytest.raises(JobHold) as info:
        JobSpec.from_ad({"ClusterId": 3, "ProcId": 1})
    assert info.value.code == HoldCode.FAILED_TO_CREATE_PROCESS
    assert "3.1" in str(info.value)


def test_attribute_names_are_case_insensitive() -> None:
    job = JobSpec.from_ad({"cmd": "/bin/true", "ARGUMENTS": "a 'b c'", "killsig": "SIGINT"})
    assert job.cmd == "/bin/true" and job.args == ("a", "b c")
    assert job.kill_sig == signal.SIGINT


def test_bad_arguments_become_a_hold() -> None:
    with pytest.raises(JobHold):
        JobSpec.from_ad({"Cmd": "/bin/true", "Arguments": "'unterminated"})


def test_slot_number_from_name_or_slotid() -> None:
    assert SlotSpec.from_ad({"Name": "slot3_2@host"}).slot_id == 3
    assert SlotSpec.from_ad({"Name": "slot3_2@host", "SlotID": 7}).slot_id == 7
    assert SlotSpec.from_ad({"Name": "slot3_2@host"}).short_name == "slot3_2"


def test_gpu_and_thread_variables() -> None:
    job = JobSpec.from_ad({"Cmd": "/bin/true", "Environment": "OMP_NUM_THREADS=1 "
                           "NOTIFY_SOCKET=/run/x INVOCATION_ID=abc"})
    slot = SlotSpec.from_ad({"Name": "slot1@h", "Cpus": 3.7,
                             "AssignedGPUs": "CUDA0, CUDA2"})
    env = job_environment(job, slot, scratch="/s", job_ad_path="/s/.job.ad",
                          machine_ad_path="/s/.machine.ad", iwd="/s",
                          thread_vars=("OMP_NUM_THREADS", "MKL_NUM_THREADS"))
    assert env["OMP_NUM_THREADS"] == "1"       # the job's own choice wins
    assert env["MKL_NUM_THREADS"] == "3"
    assert env["CUDA_VISIBLE_DEVICES"] == "0,2"
    assert env["_CONDOR_AssignedGPUs"] == "CUDA0,CUDA2"
    assert env["_CONDOR_SLOT"] == "slot1"
    assert "NOTIFY_SOCKET" not in env and "INVOCATION_ID" not in env
    assert gpu_visible_devices(("GPU-1a2b",)) == "GPU-1a2b"


def test_usage_latches_peaks_and_prefers_the_larger_cpu_figure() -> None:
    from condorpy.starter.cgroup import CgroupSample
    from condorpy.starter.usage import Usage
    u = Usage()
    u.add_cgroup(CgroupSample(user_usec=2_000_000, system_usec=500_000,
                              memory_bytes=300 << 20, peak_bytes=400 << 20, pids=4,
                              oom_kills=0))
    u.add_cgroup(CgroupSample(user_usec=2_500_000, system_usec=600_000,
                              memory_bytes=10 << 20, peak_bytes=None, pids=1, oom_kills=0))
    u.add_rusage(1.0, 0.1)
    a = u.attributes()
    assert (a["RemoteUserCpu"], a["RemoteSysCpu"]) == (2.5, 0.6)
    assert a["MemoryUsage"] == 300 and a["ResidentSetSize"] == 300 * 1024
    assert a["ImageSize"] == 400 * 1024 and a["NumPids"] == 4
