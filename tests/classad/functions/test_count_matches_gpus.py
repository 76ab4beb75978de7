"""countMatches over GPU property records, as condor_submit's Requirements and the
startd's slot ad spell them (no reference library needed)."""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd, Undefined, parse_expr

SLOT = """[
  AvailableGPUs = { GPUs_GPU_a0223334, GPUs_GPU_b1c2d3e4, GPUs_GPU_c5d6e7f8 };
  GPUs_GPU_a0223334 = [ Capability = 7.0; DeviceName = "Tesla V100-SXM2-16GB";
                        GlobalMemoryMb = 16160 ];
  GPUs_GPU_b1c2d3e4 = [ Capability = 8.0; DeviceName = "NVIDIA A100-SXM4-40GB";
                        GlobalMemoryMb = 40536 ];
  GPUs_GPU_c5d6e7f8 = [ Capability = 8.0; DeviceName = "NVIDIA A100-SXM4-40GB";
                        GlobalMemoryMb = 40536 ];
  GPUs = 3
]"""
REQUIREMENTS = "countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) >= RequestGPUs"


def _job(require: str) -> ClassAd:
    return ClassAd.parse_new(f"[RequireGPUs = {require}; RequestGPUs = 1; "
                             f"Requirements = {REQUIREMENTS}]")


@pytest.mark.parametrize("require, count", [("Capability >= 8.0", 2),
                                            ("Capability >= 9.5", 0),
                                            ("Capability >= 7.0", 3),
                                            ('DeviceName == "Tesla V100-SXM2-16GB"', 1)])
def test_count_matches_evaluates_the_referenced_expression_in_each_gpu(
        require: str, count: int) -> None:
    job, slot = _job(require), ClassAd.parse_new(SLOT)
    expr = parse_expr("countMatches(MY.RequireGPUs, TARGET.AvailableGPUs)")
    assert expr.evaluate(job, slot) == count
    assert job.evaluate("Requirements", slot) is (count >= 1)


def test_eval_in_each_context_lists_each_gpus_result() -> None:
    job, slot = _job("Capability >= 8.0"), ClassAd.parse_new(SLOT)
    got = parse_expr("evalInEachContext(MY.RequireGPUs, TARGET.AvailableGPUs)")
    assert got.evaluate(job, slot) == [False, True, True]


def test_an_unmatched_lookup_leaves_nothing_to_count() -> None:
    slot = ClassAd.parse_new(SLOT)
    job = ClassAd.parse_new("[RequestGPUs = 1]")  # no RequireGPUs at all
    assert parse_expr("countMatches(MY.RequireGPUs, TARGET.AvailableGPUs)"
                      ).evaluate(job, slot) == 0
    assert parse_expr("evalInEachContext(MY.RequireGPUs, TARGET.AvailableGPUs)"
                      ).evaluate(job, slot) is Undefined


def test_without_require_gpus_the_rest_of_the_requirements_is_undefined() -> None:
    # the lookup of the missing RequireGPUs leaves the evaluation above both ads, so
    # RequestGPUs after the call is found in neither (HTCondor's library does this)
    slot = ClassAd.parse_new(SLOT)
    job = ClassAd.parse_new(f"[RequestGPUs = 1; Requirements = {REQUIREMENTS}]")
    assert job.evaluate("Requirements", slot) is Undefined
    # what is evaluated before the call is not affected
    job = ClassAd.parse_new("[RequestGPUs = 1; Requirements = RequestGPUs <= "
                            "countMatches(MY.RequireGPUs, TARGET.AvailableGPUs)]")
    assert job.evaluate("Requirements", slot) is False


def test_the_move_ends_with_the_attribute_that_holds_the_call() -> None:
    slot = ClassAd.parse_new(SLOT)
    job = ClassAd.parse_new("[RequestGPUs = 1; RequireGPUs = Capability >= 8.0; "
                            "N = countMatches(MY.nothere, TARGET.AvailableGPUs); "
                            "Requirements = N + RequestGPUs >= 1 && "
                            "countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) >= "
                            "RequestGPUs]")
    assert job.evaluate("Requirements", slot) is True


def test_gpus_listed_through_an_attribute_chain_are_found_where_the_call_stands() -> None:
    slot = ClassAd.parse_new(SLOT.replace("GPUs = 3", "GPUs = 3; Usable = AvailableGPUs"))
    job = _job("Capability >= 8.0")
    expr = parse_expr("countMatches(MY.RequireGPUs, TARGET.Usable)")
    assert expr.evaluate(job, slot) == 2
