"""The one rule for attributes only condorpy sets, and what the local queue owns of a
submitted job (condorpy/starter/reserved.py), and the submit client applying it."""

from __future__ import annotations

import logging

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import SubmitError
from condorpy.startd.hooks import FETCHED
from condorpy.startd.poolside import pool_job_ad
from condorpy.queue.submit import parse_submit
from condorpy.starter.reserved import (SUBMITTED_ON_HOLD_CODE, SUBMITTED_ON_HOLD_REASON,
                                       admit_submitted, internal_attributes, is_internal,
                                       strip_internal, submission_refusal)
from condorpy.starter.sandbox import PREPARED_SCRATCH_ATTR


@pytest.mark.parametrize("name", [PREPARED_SCRATCH_ATTR, FETCHED, "CondorpyActivatedAt",
                                  "condorpypreparedscratch", "CONDORPYANYTHING",
                                  "StarterUserLog", "starteruserlog", "Condorpy"])
def test_every_internal_name_is_reserved_whatever_its_case(name: str) -> None:
    assert is_internal(name)


@pytest.mark.parametrize("name", ["Cmd", "UserLog", "Owner", "MyCondorpyThing",
                                  "Condor", "StarterLog"])
def test_ordinary_names_are_not_reserved(name: str) -> None:
    assert not is_internal(name)


def test_a_pool_job_ad_loses_its_internal_attributes_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    ad = ClassAd.parse_old('ClusterId = 12\nProcId = 3\nCmd = "/bin/true"\n'
                           'condorpyPreparedScratch = "/etc"\nStarterUserLog = "/root/x"\n'
                           'CondorpyFetchedFrom = "X"\nUserLog = "/home/u/log"')
    caplog.set_level(logging.WARNING, "condorpy.startd.pool")
    clean = pool_job_ad(ad, "slot1_1#claim", "<10.0.0.1:9618>", "the shadow's job ad")
    assert internal_attributes(clean) == []
    assert clean.get("Cmd") == "/bin/true" and clean.get("UserLog") == "/home/u/log"
    assert ad.get(PREPARED_SCRATCH_ATTR) == "/etc"       # the pool's own ad is untouched
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert "slot1_1#claim" in lines[0] and "job 12.3" in lines[0]
    assert "condorpyPreparedScratch" in lines[0] and "StarterUserLog" in lines[0]


def test_an_ad_without_internal_attributes_is_kept_as_it_is() -> None:
    ad = ClassAd.parse_old('Cmd = "/bin/true"')
    assert strip_internal(ad) == (ad, [])


@pytest.mark.parametrize("text, attr", [
    ('CondorpyPreparedScratch = "/tmp/x"', "CondorpyPreparedScratch"),
    ('StarterUserLog = "/tmp/log"', "StarterUserLog"),
    ("JobStatus = 2", "JobStatus"),
    ("JobStatus = 4", "JobStatus"),
    ("JobStatus = 1 + 1", "JobStatus"),
    ("ProcId = -1", "ProcId"),
    ('ProcId = "0"', "ProcId"),
])
def test_a_submission_setting_what_it_may_not_is_refused_naming_it(text: str,
                                                                   attr: str) -> None:
    got = submission_refusal(ClassAd.parse_old(f'Cmd = "/bin/true"\n{text}'))
    assert got is not None and got[0] == attr


def test_a_submission_idle_or_on_hold_is_taken() -> None:
    for text in ("", "JobStatus = 1", "JobStatus = 5", "ProcId = 7"):
        assert submission_refusal(ClassAd.parse_old(f'Cmd = "/bin/true"\n{text}')) is None


def test_the_queue_owns_identity_state_and_counters() -> None:
    ad = ClassAd.parse_old('Owner = "victim"\nUser = "victim@x"\nJobStatus = 1\n'
                           'NumJobStarts = 1000\nJobRunCount = 9\nGlobalJobId = "x#1.0#1"\n'
                           'EnteredCurrentStatus = 1\nHoldReasonCode = 3\nQDate = 77')
    out = admit_submitted(ad, owner="attacker", user="attacker@dom", now=500)
    assert (out.get("Owner"), out.get("User")) == ("attacker", "attacker@dom")
    assert out.get("JobStatus") == 1 and "HoldReasonCode" not in out
    assert out.get("NumJobStarts") == 0 and out.get("JobRunCount") == 0
    assert "GlobalJobId" not in out
    assert out.get("EnteredCurrentStatus") == 500 and out.get("QDate") == 77
    assert ad.get("Owner") == "victim"                  # a copy


def test_a_job_submitted_on_hold_is_held_as_condor_submit_holds_it() -> None:
    out = admit_submitted(ClassAd.parse_old("JobStatus = 5\nHoldReasonCode = 1"),
                          owner="u", user="u@d", now=1)
    assert out.get("JobStatus") == 5
    assert out.get("HoldReasonCode") == SUBMITTED_ON_HOLD_CODE == 15
    assert out.get("HoldReason") == SUBMITTED_ON_HOLD_REASON
    assert out.get("HoldReasonSubCode") == 0


def _parse(text: str) -> list[ClassAd]:
    return parse_submit(text, "job.sub", cluster_id=4, owner="u", submit_dir="/tmp",
                        qdate=1)


@pytest.mark.parametrize("line", ['+CondorpyPreparedScratch = "/var/lib/x/dir_1"',
                                  'MY.condorpypreparedscratch = "/etc"',
                                  '+StarterUserLog = "/tmp/l"',
                                  "+JobStatus = 2"])
def test_the_submit_client_refuses_at_the_file_and_line(line: str) -> None:
    with pytest.raises(SubmitError) as info:
        _parse(f"executable = /bin/true\n{line}\nqueue\n")
    assert info.value.file == "job.sub" and info.value.line == 2
    name = line.split("=")[0].strip().lstrip("+")
    name = name[3:] if name.upper().startswith("MY.") else name
    assert name in str(info.value)


def test_hold_true_submits_on_hold() -> None:
    (ad,) = _parse("executable = /bin/true\nhold = true\nqueue\n")
    assert submission_refusal(ad) is None
    assert (ad.get("JobStatus"), ad.get("HoldReasonCode")) == (5, 15)
