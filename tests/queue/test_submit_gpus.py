"""request_gpus, require_gpus and the gpus_minimum_*/gpus_maximum_capability commands as
condor_submit 23.9.6 writes them into the job ad (expected values recorded from its
``-dry-run``; tests/pool/test_gpus_pool.py checks them against the live binary)."""

from __future__ import annotations

import pytest

from condorpy.queue.submit import parse_submit

COUNT_MATCHES = "(countMatches(MY.RequireGPUs,TARGET.AvailableGPUs) >= RequestGPUs)"

# name -> (submit commands, the job attributes condor_submit 23.9.6 wrote; None: absent)
CASES: dict[str, tuple[str, dict[str, str | None]]] = {
    "request_only": ("request_gpus = 1", {
        "RequestGPUs": "1", "RequireGPUs": None}),
    "require_gpus": ("request_gpus = 1\nrequire_gpus = Capability >= 8.0", {
        "RequestGPUs": "1", "RequireGPUs": "Capability >= 8.0"}),
    "require_without_request": ("require_gpus = Capability >= 8.0", {
        "RequestGPUs": None, "RequireGPUs": None}),
    "require_with_zero": ("request_gpus = 0\nrequire_gpus = Capability >= 8.0", {
        "RequestGPUs": "0", "RequireGPUs": "Capability >= 8.0"}),
    "min_capability": ("request_gpus = 2\ngpus_minimum_capability = 8.0", {
        "RequireGPUs": "Capability >= GPUsMinCapability", "GPUsMinCapability": "8.0"}),
    "min_max_capability": ("request_gpus = 1\ngpus_minimum_capability = 7.5\n"
                           "gpus_maximum_capability = 8.6", {
        "RequireGPUs": "Capability >= GPUsMinCapability && Capability <= GPUsMaxCapability",
        "GPUsMinCapability": "7.5", "GPUsMaxCapability": "8.6"}),
    "min_memory_megabytes": ("request_gpus = 1\ngpus_minimum_memory = 20000", {
        "RequireGPUs": "GlobalMemoryMb >= GPUsMinMemory", "GPUsMinMemory": "20000"}),
    "min_memory_units": ("request_gpus = 1\ngpus_minimum_memory = 20G", {
        "GPUsMinMemory": "20480"}),
    "min_memory_fraction": ("request_gpus = 1\ngpus_minimum_memory = 2.5G", {
        "GPUsMinMemory": "2560"}),
    "runtime_dotted": ("request_gpus = 1\ngpus_minimum_runtime = 11.2", {
        "RequireGPUs": "MaxSupportedVersion >= GPUsMinRuntime", "GPUsMinRuntime": "11020"}),
    "runtime_major": ("request_gpus = 1\ngpus_minimum_runtime = 12", {
        "GPUsMinRuntime": "12000"}),
    "runtime_canonical": ("request_gpus = 1\ngpus_minimum_runtime = 12010", {
        "GPUsMinRuntime": "12010"}),
    "require_names_capability": ("request_gpus=1\nrequire_gpus = Capability >= 8.0\n"
                                 "gpus_minimum_capability = 7.0\ngpus_minimum_memory=1G", {
        "RequireGPUs": "Capability >= 8.0 && GlobalMemoryMb >= GPUsMinMemory",
        "GPUsMinCapability": "7.0", "GPUsMinMemory": "1024"}),
    "require_or_is_parenthesized": ("request_gpus = 1\nrequire_gpus = Capability >= 8.0 || "
                                    "DeviceName == \"X\"\ngpus_minimum_memory = 100", {
        "RequireGPUs": "(Capability >= 8.0 || DeviceName == \"X\") && "
                       "GlobalMemoryMb >= GPUsMinMemory"}),
    "my_scope_names_the_property": ("request_gpus = 1\nrequire_gpus = MY.Capability > 7\n"
                                    "gpus_minimum_capability = 7.5", {
        "RequireGPUs": "MY.Capability > 7"}),
    "target_scope_does_not": ("request_gpus = 1\nrequire_gpus = TARGET.Capability > 7\n"
                              "gpus_minimum_capability = 7.5", {
        "RequireGPUs": "TARGET.Capability > 7 && Capability >= GPUsMinCapability"}),
    "forced_attribute": ("request_gpus = 1\n+RequireGPUs = DeviceName != \"V\"\n"
                         "gpus_minimum_capability = 7.5", {
        "RequireGPUs": "DeviceName != \"V\" && Capability >= GPUsMinCapability"}),
    "unparsed_spacing": ("request_gpus = 1\nrequire_gpus = Capability>=8.0&&GlobalMemoryMb>1", {
        "RequireGPUs": "Capability >= 8.0 && GlobalMemoryMb > 1"}),
}


def submit(commands: str) -> dict[str, str | None]:
    """The job ad of ``commands`` as attribute texts."""
    ad = parse_submit(f"executable = /bin/true\n{commands}\nqueue\n", "job.sub", cluster_id=1,
                      owner="alice", submit_dir="/tmp", qdate=0, env={})[0]
    return {name: str(ad.lookup(name)) for name in ad.keys()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_attributes_as_condor_submit_writes_them(case: str) -> None:
    commands, want = CASES[case]
    got = submit(commands)
    for name, text in want.items():
        assert got.get(name) == text, name


@pytest.mark.parametrize("case", sorted(CASES))
def test_requirements_count_matching_gpus_only_with_require_gpus(case: str) -> None:
    commands, _ = CASES[case]
    got = submit(commands)
    requirements = got["Requirements"] or ""
    request = got.get("RequestGPUs")
    if request is None or request == "0":
        assert "GPUs" not in requirements
    elif got.get("RequireGPUs") is not None:
        assert COUNT_MATCHES in requirements
        assert "TARGET.GPUs" not in requirements
    else:
        assert "(TARGET.GPUs >= RequestGPUs)" in requirements
