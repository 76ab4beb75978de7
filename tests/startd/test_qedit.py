"""`qedit` in the daemon: who may change which attribute of which job, to what, and that
the change is in the job store and seen by the next match (in-process: the resource
manager, local schedd and policy engine of tests/startd/rm_rig.py)."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from condorpy.errors import CondorpyError
from condorpy.queue.jobstore import JobId, JobStore
from condorpy.queue.submit import parse_submit
from condorpy.startd import control
from tests.startd.rm_rig import Rig

NOBODY = pwd.getpwnam("nobody")
SLEEP = "executable = /bin/sleep\narguments = 60\nrequest_memory = 16\n"


def _submit_as(rig: Rig, owner: str, text: str) -> list[str]:
    cluster = rig.store.new_cluster_id()
    ads = parse_submit(text, "test.sub", cluster_id=cluster, owner=owner,
                       submit_dir="/tmp", qdate=int(rig.clock.time()))
    rig.store.submit(ads, cluster_id=cluster)
    records = rig.store.jobs(f"ClusterId == {cluster}")
    rig.schedd.submitted(records)
    return [str(r.job_id) for r in records]


def _as_nobody(rig: Rig, command: str, **args: object) -> object:
    peer = control.Peer(os.getpid(), NOBODY.pw_uid, NOBODY.pw_gid)
    return rig.commands.dispatch(command, dict(args), peer)


def _edit(rig: Rig, ids: list[str], **edits: str) -> object:
    return rig.cli("qedit", ids=ids, attrs=list(edits), values=list(edits.values()))


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


def test_owner_edits_own_job_and_value_is_an_expression(rig: Rig) -> None:
    [job] = _submit_as(rig, "nobody", SLEEP + "queue\n")
    got = _as_nobody(rig, "qedit", ids=[job], attrs=["Foo", "Bar", "Baz"],
                     values=['"text"', "RequestMemory * 2", "undefined"])
    assert got == {"count": 1, "jobs": [job]}
    assert rig.attr(job, "Foo") == "text"
    assert rig.attr(job, "Bar") == 32          # an expression, evaluated in the ad
    rec = rig.store.job(JobId(1, 0))
    assert rec is not None and "Bar = RequestMemory * 2" in rec.ad.to_old()


def test_another_users_job_is_refused_by_id_and_skipped_by_constraint(rig: Rig) -> None:
    [alices] = _submit_as(rig, "alice", SLEEP + "queue\n")
    [mine] = _submit_as(rig, "nobody", SLEEP + "queue\n")
    with pytest.raises(CondorpyError, match="may not change attributes for jobs they do "
                                            "not own"):
        _as_nobody(rig, "qedit", ids=[alices], attrs=["Foo"], values=["1"])
    with pytest.raises(CondorpyError, match="do not own"):
        _as_nobody(rig, "qedit", owners=["alice"], attrs=["Foo"], values=["1"])
    # a constraint alone reaches the caller's own jobs only (condor_qedit's OnlyMyJobs)
    got = _as_nobody(rig, "qedit", constraint="true", attrs=["Foo"], values=["1"])
    assert got == {"count": 1, "jobs": [mine]}
    assert rig.attr(alices, "Foo") is not None and rig.attr(mine, "Foo") == 1
    from condorpy.classad import Undefined
    assert rig.attr(alices, "Foo") is Undefined


def test_a_queue_superuser_edits_any_job(rig: Rig) -> None:
    jobs = _submit_as(rig, "alice", SLEEP + "queue 2\n")
    assert _edit(rig, ["1"], JobPrio="5") == {"count": 2, "jobs": jobs}
    assert [rig.attr(j, "JobPrio") for j in jobs] == [5, 5]


@pytest.mark.parametrize("attr", ["ClusterId", "ProcId", "Owner", "JobStatus", "User",
                                  "JobUniverse", "clusterid", "TotalSubmitProcs",
                                  "CondorpyPreparedScratch", "StarterUserLog"])
def test_immutable_secure_and_reserved_attributes_are_refused_even_to_root(
        rig: Rig, attr: str) -> None:
    [job] = _submit_as(rig, "alice", SLEEP + "queue\n")
    before = rig.store.job(JobId(1, 0))
    with pytest.raises(CondorpyError, match=r"attribute .* is not allowed"):
        _edit(rig, [job], **{attr: "7"})
    assert rig.store.job(JobId(1, 0)) == before


def test_protected_attributes_are_for_superusers(tmp_path: Path) -> None:
    rig = Rig(tmp_path, extra="PROTECTED_JOB_ATTRS = Secret\n")
    [job] = _submit_as(rig, "nobody", SLEEP + "queue\n")
    with pytest.raises(CondorpyError, match="protected attribute Secret"):
        _as_nobody(rig, "qedit", ids=[job], attrs=["Secret"], values=["1"])
    _edit(rig, [job], Secret="1")
    assert rig.attr(job, "Secret") == 1


def test_immutable_knob_adds_to_the_system_list(tmp_path: Path) -> None:
    rig = Rig(tmp_path, extra="IMMUTABLE_JOB_ATTRS = Frozen\n")
    [job] = _submit_as(rig, "alice", SLEEP + "queue\n")
    with pytest.raises(CondorpyError, match='immutable attribute "Frozen"'):
        _edit(rig, [job], Frozen="1")
    with pytest.raises(CondorpyError, match='immutable attribute "Owner"'):
        _edit(rig, [job], Owner='"root"')


@pytest.mark.parametrize("value, why", [("A +", "not a ClassAd expression"),
                                        ("", "empty expression"),
                                        ("(1", "not a ClassAd expression")])
def test_a_bad_value_is_a_clear_error_and_nothing_changes(rig: Rig, value: str,
                                                          why: str) -> None:
    [job] = _submit_as(rig, "alice", SLEEP + "queue\n")
    with pytest.raises(CondorpyError, match=f"illegal value for Foo: .*{why}"):
        rig.cli("qedit", ids=[job], attrs=["Ok", "Foo"], values=["1", value])
    assert rig.attr(job, "Ok") is not None
    from condorpy.classad import Undefined
    assert rig.attr(job, "Ok") is Undefined       # all edits or none


@pytest.mark.parametrize("name", ["1abc", "a-b", "true", "", "a b"])
def test_an_illegal_attribute_name_is_refused(rig: Rig, name: str) -> None:
    [job] = _submit_as(rig, "alice", SLEEP + "queue\n")
    with pytest.raises(CondorpyError, match="illegal attribute name"):
        _edit(rig, [job], **{name: "1"})


def test_no_such_job_and_no_match(rig: Rig) -> None:
    _submit_as(rig, "alice", SLEEP + "queue\n")
    with pytest.raises(CondorpyError, match="nonexistent job 7.0"):
        _edit(rig, ["7.0"], Foo="1")
    with pytest.raises(CondorpyError, match="no matching jobs"):
        _edit(rig, ["7"], Foo="1")
    with pytest.raises(CondorpyError, match="no matching jobs"):
        rig.cli("qedit", constraint="Owner == \"bob\"", attrs=["Foo"], values=["1"])


def test_dry_run_changes_nothing(rig: Rig) -> None:
    [job] = _submit_as(rig, "alice", SLEEP + "queue\n")
    got = rig.cli("qedit", ids=[job], attrs=["Foo"], values=["1"], dry_run=True)
    assert got == {"count": 1, "jobs": [job]}
    from condorpy.classad import Undefined
    assert rig.attr(job, "Foo") is Undefined


def test_the_edit_survives_reopening_the_store(rig: Rig, tmp_path: Path) -> None:
    [job] = _submit_as(rig, "alice", SLEEP + "queue\n")
    _edit(rig, [job], Foo='"kept"')
    rig.store.close()
    with JobStore(tmp_path / "spool", readonly=True) as again:
        rec = again.job(JobId(1, 0))
        assert rec is not None and rec.ad.evaluate("Foo") == "kept"


def test_the_next_match_sees_the_edited_requirements(rig: Rig) -> None:
    [job] = _submit_as(rig, "alice", SLEEP + "requirements = false\nqueue\n")
    rig.step(1)
    assert rig.status(job) == 1 and rig.rm.job(JobId(1, 0)) is None
    _edit(rig, [job], Requirements="true")
    rig.step(1)
    assert rig.rm.job(JobId(1, 0)) is not None, "the edited job was not matched"


def test_the_wire_checks_the_arguments() -> None:
    bad = control.parse_request(b'{"command": "qedit", "args": {"attrs": "Foo"}}')
    assert isinstance(bad, control.BadRequest) and "attrs" in bad.reason
    ok = control.parse_request(b'{"command": "qedit", "args": {"ids": ["1.0"], '
                               b'"attrs": ["Foo"], "values": ["1"]}}')
    assert isinstance(ok, control.Request)
    assert control.COMMANDS["qedit"] is control.Access.USER
