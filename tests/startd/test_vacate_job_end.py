"""What a job's end puts in its ad about why it was interrupted."""

from __future__ import annotations

from condorpy.classad import ClassAd
from condorpy.policy import vacate_reasons as vr
from condorpy.queue.jobstore import JobId, JobStatus
from condorpy.startd.job_end import vacate_attrs, vacate_of
from condorpy.startd.starter_handle import LocalJob, StarterHandle
from condorpy.starter.holds import SYSTEM_OOM_VACATE


def _handle() -> StarterHandle:
    return StarterHandle(LocalJob(JobId(1, 0)), "claim#1", "slot1_1")


def test_the_policys_reason_goes_with_a_requeued_job() -> None:
    h = _handle()
    h.evicted, h.vacate = True, ("PREEMPT expression evaluated to True", 1011, 0)
    assert vacate_of(h, JobStatus.IDLE, True) == vr.PREEMPT
    # a job that was held or completed instead is not vacated
    assert vacate_of(h, JobStatus.HELD, True) is None
    assert vacate_of(h, JobStatus.COMPLETED, True) is None


def test_a_starter_that_failed_to_start_the_job_is_a_starter_error() -> None:
    h = _handle()
    assert vacate_of(h, JobStatus.IDLE, False) == vr.STARTER_FAILED
    assert vr.STARTER_FAILED.code == 1007


def test_attrs_count_on_from_the_ad() -> None:
    ad = ClassAd()
    for _ in range(2):
        for k, v in vacate_attrs(ad, vr.PREEMPT).items():
            ad[k] = v
    for k, v in vacate_attrs(ad, vr.SHUTDOWN).items():
        ad[k] = v
    assert ad.evaluate("VacateReason") == "Startd was shutdown"
    assert ad.evaluate("VacateReasonCode") == 1013
    assert ad.evaluate("VacateReasonSubCode") == 0
    nested = ad.evaluate("NumVacatesByReason")
    assert isinstance(nested, ClassAd)
    assert {k: nested.evaluate(k) for k in nested.keys()} == {
        "StartdPreemptExpression": 2, "StartdShutdown": 1}


def test_the_starters_own_reason_wins() -> None:
    # a starter that requeues for a node out of memory says so in its final ad
    h = _handle()
    attrs: dict[str, object] = dict(SYSTEM_OOM_VACATE)
    assert vacate_of(h, JobStatus.IDLE, True, attrs) == vr.SYSTEM_OOM
    assert vr.SYSTEM_OOM.attrs() == SYSTEM_OOM_VACATE
