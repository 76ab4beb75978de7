from __future__ import annotations

import pwd

import pytest

from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.jobspec import JobSpec, SlotSpec
from condorpy.starter.settings import StarterSettings
from condorpy.starter.users import choose_user, submitter

SLOT2 = SlotSpec.from_ad({"Name": "slot2@h"})


def job(owner: str | None) -> JobSpec:
    ad: dict[str, object] = {"Cmd": "/bin/true"}
    if owner:
        ad["Owner"] = owner
    return JobSpec.from_ad(ad)


def existing_user() -> str:
    for entry in pwd.getpwall():
        if entry.pw_uid not in (0, 65534):
            return entry.pw_name
    pytest.skip("no ordinary account on this machine")


def test_root_runs_the_owner_when_allowed() -> None:
    name = existing_user()
    user = choose_user(job(name), SLOT2, StarterSettings(execute="/x"), euid=0)
    assert user.name == name and user.switch


def test_owner_not_allowed_falls_to_slot_user_then_nobody() -> None:
    name = existing_user()
    s = StarterSettings(execute="/x", allow_runas_owner=False, slot_users={2: name})
    assert choose_user(job("someone"), SLOT2, s, euid=0).name == name
    s = StarterSettings(execute="/x", allow_runas_owner=False)
    assert choose_user(job(name), SLOT2, s, euid=0).name == "nobody"


def test_never_root_unless_configured() -> None:
    s = StarterSettings(execute="/x")
    assert choose_user(job("root"), SLOT2, s, euid=0).name == "nobody"
    s = StarterSettings(execute="/x", allow_root_jobs=True)
    assert choose_user(job("root"), SLOT2, s, euid=0).uid == 0


def test_unknown_owner_and_no_fallback_is_a_hold() -> None:
    s = StarterSettings(execute="/x", nobody_user="no-such-account-here")
    with pytest.raises(JobHold) as info:
        choose_user(job("no-such-owner"), SLOT2, s, euid=0)
    assert info.value.code == HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT


def test_unprivileged_starter_runs_jobs_as_itself() -> None:
    user = choose_user(job("root"), SLOT2, StarterSettings(execute="/x"), euid=65534)
    assert user.uid == 65534 and not user.switch


def test_a_local_jobs_submitter_is_looked_up_as_root() -> None:
    """The account whose rights write a local job's log and outputs: none for a job
    that has no submitter here; the named account as root (a missing one holds the
    job, code 23); an unprivileged starter's own account whatever the name."""
    assert submitter(None, euid=0) is None and submitter("", euid=0) is None
    name = existing_user()
    who = submitter(name, euid=0)
    assert who is not None and who.name == name and who.switch
    assert who.uid == pwd.getpwnam(name).pw_uid
    with pytest.raises(JobHold) as held:
        submitter("no-such-account-here", euid=0)
    assert held.value.code is HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT
    me = pwd.getpwuid(65534)
    own = submitter("someone-else", euid=me.pw_uid)
    assert own is not None and own.uid == me.pw_uid and not own.switch
