"""The docker client's output read as records, and failed starts told apart (pure)."""

from __future__ import annotations

import json

import pytest

from condorpy.machine.docker import ContainerState, DockerFacts, DockerError, \
    FailureKind, classify_failure, classify_state_error, names_of, parse_images_size_mb, \
    parse_inspect, parse_size_bytes, parse_version, version_numbers, wait_status


def test_version_is_docker_s_single_line() -> None:
    line = "Docker version 20.10.24+dfsg1, build 297e128"
    assert parse_version(line + "\n") == line
    assert version_numbers(line) == (20, 10)
    assert parse_version("podman version 4.3.1\n") is None
    assert parse_version(line + "\nmore\n") is None
    assert parse_version("") is None


@pytest.mark.parametrize("text, size", [("1.24MB", 1_240_000), ("512kB", 512_000),
                                        ("2GB", 2_000_000_000), ("0B", 0)])
def test_sizes_in_docker_s_decimal_units(text: str, size: int) -> None:
    assert parse_size_bytes(text) == size


def test_cached_image_size_counts_each_image_once() -> None:
    text = "abc 1.5MB\nabc 1.5MB\ndef 600kB\nbroken line here\n"
    assert parse_images_size_mb(text) == 3        # 2.1 MB rounded up
    assert parse_images_size_mb("") == 0


def _inspect(**state: object) -> str:
    base = {"Status": "exited", "Running": False, "Paused": False, "ExitCode": 0,
            "OOMKilled": False, "Error": "", "Pid": 0}
    base.update(state)
    return json.dumps([{"State": base, "Config": {"Labels": {"org.condorpy.job": "3.0"}}}])


def test_inspect_reads_state_and_labels() -> None:
    st = parse_inspect(_inspect(ExitCode=137, OOMKilled=True))
    assert isinstance(st, ContainerState)
    assert (st.exit_code, st.oom_killed, st.running) == (137, True, False)
    assert st.label("org.condorpy.job") == "3.0"
    with pytest.raises(DockerError):
        parse_inspect("[]")
    with pytest.raises(DockerError):
        parse_inspect("not json")


def test_exit_code_as_wait_status_as_htcondor_reads_it() -> None:
    import os
    assert os.WIFEXITED(wait_status(3)) and os.WEXITSTATUS(wait_status(3)) == 3
    assert os.WIFSIGNALED(wait_status(137)) and os.WTERMSIG(wait_status(137)) == 9
    assert os.WEXITSTATUS(wait_status(0)) == 0


@pytest.mark.parametrize("code, err, kind", [
    (None, "No such file or directory: '/usr/bin/docker'", FailureKind.RUNTIME_DOWN),
    (125, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the "
          "docker daemon running?", FailureKind.RUNTIME_DOWN),
    (125, "Unable to find image 'nosuch:latest' locally\nError response from daemon: "
          "pull access denied for nosuch", FailureKind.RUNTIME),
    (125, "Error response from daemon: invalid mount config for type \"bind\": bind "
          "source path does not exist: /nope", FailureKind.RUNTIME),
    (125, "docker: invalid reference format: repository name must be lowercase.",
     FailureKind.JOB),
    (127, "exec: \"nosuch\": executable file not found in $PATH", FailureKind.JOB),
])
def test_failed_start_told_apart(code: int | None, err: str, kind: FailureKind) -> None:
    failure = classify_failure(code, err, step="create")
    assert failure.kind is kind
    assert failure.reason


def test_state_error_job_or_machine() -> None:
    assert classify_state_error('OCI runtime create failed: exec: "x": executable file '
                                'not found in $PATH') is FailureKind.JOB
    assert classify_state_error("error mounting \"/a\" to rootfs: permission denied") \
        is FailureKind.RUNTIME


def test_names_listed() -> None:
    assert names_of("HTCJob1_0_slot1_PID5\n\n HTCJob2_0_slot1_PID6 \n") == [
        "HTCJob1_0_slot1_PID5", "HTCJob2_0_slot1_PID6"]


def test_slot_attributes_of_the_runtime() -> None:
    line = "Docker version 20.10.24+dfsg1, build 297e128"
    healthy = DockerFacts(line, True, cached_mb=3).attrs()
    assert healthy == {"HasSingularity": False, "HasDocker": True, "DockerVersion": line,
                       "HasContainer": True, "HasDockerURL": True,
                       "DockerCachedImageSizeMb": 3}
    down = DockerFacts(line, True, cached_mb=3).failed("daemon gone").attrs()
    assert down["HasDocker"] is False and down["HasContainer"] is False
    assert down["DockerOfflineReason"] == "daemon gone"
    absent = DockerFacts(None, False).attrs()
    assert "HasDocker" not in absent and absent["HasContainer"] is False
    assert "SingularityVersion" not in absent
