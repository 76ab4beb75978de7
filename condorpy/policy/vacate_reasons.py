"""Why a job was taken off this execution point: HTCondor's vacate reasons and codes.

HTCondor (24.3 on) records every interruption of a job in three job attributes,
``VacateReason`` (text), ``VacateReasonCode`` and ``VacateReasonSubCode``, and its schedd
counts them per code *name* in ``NumVacatesByReason`` (24.11.2), a nested ad such as
``[ StartdPreemptExpression = 2; StartdVacateCommand = 1 ]``. The codes are HTCondor's
``CONDOR_HOLD_CODE`` values (condor_holdcodes.h): 1000 and above mean "requeue, do not
hold"; 0 (Unspecified) is what HTCondor sends where it has no code (a claim whose lease
ran out, a node out of memory). The texts are those HTCondor's startd and starter give.

Pure: the policy engine picks a :class:`Vacate` where it decides an interruption, the
daemon writes it into the job ad and history.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Mapping

from condorpy.policy.records import EvictWhy


class VacateCode(IntEnum):
    """The CONDOR_HOLD_CODE values an execution point sends as a VacateReasonCode."""

    Unspecified = 0
    StartdHeldJob = 21
    JobOutOfResources = 34
    JobPolicyVacate = 1000
    SystemPolicyVacate = 1001
    ShadowException = 1002
    JobNotStarted = 1003
    UserVacateJob = 1004
    JobShouldRequeue = 1005
    FailedToActivateClaim = 1006
    StarterError = 1007
    ReconnectFailed = 1008
    ClaimDeactivated = 1009
    StartdVacateCommand = 1010
    StartdPreemptExpression = 1011
    StartdException = 1012
    StartdShutdown = 1013
    StartdDraining = 1014
    StartdCoalesce = 1015
    StartdHibernate = 1016
    StartdReleaseCommand = 1017
    StartdPreemptingClaimRank = 1018
    StartdPreemptingClaimUserPrio = 1019
    VMError = 1020
    ContainerError = 1021
    ScheddVacate = 1022
    JobRemoved = 1023
    ScratchDirError = 1024
    SuccessfulCheckpoint = 1025
    ActivationRefusedBadRequest = 1026
    ActivationRefusedNoMatch = 1027
    ActivationRefusedStillCleaning = 1028
    ActivationRefusedWorklifeExpired = 1029
    ActivationRefusedPreempted = 1030
    ActivationRefusedBroken = 1031
    ActivationRefusedNotIdle = 1032
    ActivationRefusedUnclaimed = 1033
    ActivationRefusedClaimNotFound = 1034
    ActivationRefusedOldClaim = 1035
    ActivationRefusedUnhealthy = 1036
    StartdRehoming = 1037


@dataclass(frozen=True)
class Vacate:
    """One interruption's reason, code and subcode."""

    reason: str
    code: int            # a VacateCode; a starter may report one this table lacks
    subcode: int = 0

    def attrs(self) -> dict[str, Any]:
        return {"VacateReason": self.reason, "VacateReasonCode": int(self.code),
                "VacateReasonSubCode": self.subcode}


# The interruptions this execution point makes, with HTCondor's texts and codes.
PREEMPT = Vacate("PREEMPT expression evaluated to True", VacateCode.StartdPreemptExpression)
KILL = Vacate("KILL expression evaluated to True", VacateCode.StartdPreemptExpression)
RANK = Vacate("Preempted for a higher Ranked job", VacateCode.StartdPreemptingClaimRank)
USER_PRIO = Vacate("Preempted for a Priority user", VacateCode.StartdPreemptingClaimUserPrio)
VACATE_COMMAND = Vacate("Claim vacated by the administrator", VacateCode.StartdVacateCommand)
RELEASED = Vacate("Schedd released the claim", VacateCode.StartdReleaseCommand)
DEACTIVATED = Vacate("Claim deactivated", VacateCode.ClaimDeactivated)
COALESCED = Vacate("Claim was coalesced", VacateCode.StartdCoalesce)
SHUTDOWN = Vacate("Startd was shutdown", VacateCode.StartdShutdown)
DRAINING = Vacate("Startd was draining", VacateCode.StartdDraining)
HIBERNATE = Vacate("Startd hibernated", VacateCode.StartdHibernate)
LEASE = Vacate("Claim lease expired", VacateCode.Unspecified)
WORKLIFE = Vacate("CLAIM_WORKLIFE expired", VacateCode.Unspecified)
STARTER_FAILED = Vacate("Starter failed to initialize", VacateCode.StarterError)
SYSTEM_OOM = Vacate("Worker node is out of memory", VacateCode.Unspecified)

# Moves that carry on an interruption already recorded (HTCondor sets no new reason
# when KILL turns a vacate into a kill, or when the retirement time runs out).
_CONTINUATIONS = ("retirement time over", "KILL is True", "job exited during retirement")


def for_eviction(why: EvictWhy | None, text: str, *, rank_higher: bool | None) -> Vacate | None:
    """The vacate reason of a move the policy engine makes: ``why`` is why the claim is
    taken, ``text`` the transition's reason, ``rank_higher`` whether a waiting claim
    outranks the running one (None: no claim waits). None: the move records nothing
    new (it continues an interruption already recorded)."""
    if text.startswith(_CONTINUATIONS):
        return KILL if text.startswith("KILL") else None
    if text.startswith("condor_vacate"):
        return VACATE_COMMAND
    if why is EvictWhy.DRAIN:
        return DRAINING
    if why is EvictWhy.SHUTDOWN:
        return SHUTDOWN
    if why is EvictWhy.RANK or rank_higher is not None:
        return RANK if rank_higher else USER_PRIO
    if why is EvictWhy.RELEASE:
        return COALESCED if text.startswith("coalesced") else RELEASED
    if why is EvictWhy.LEASE:
        return LEASE
    if why is EvictWhy.WORKLIFE:
        return WORKLIFE
    if text.startswith("PREEMPT"):
        return PREEMPT
    return Vacate(text, VacateCode.Unspecified) if text else None


def code_name(code: int) -> str:
    """The name NumVacatesByReason counts a code under: an unknown code as Unspecified,
    as HTCondor's schedd does."""
    try:
        return VacateCode(code).name
    except ValueError:
        return VacateCode.Unspecified.name


def counted(before: Mapping[str, Any] | None, code: int) -> dict[str, int]:
    """NumVacatesByReason after one more vacate with ``code``."""
    out = {str(k): int(v) for k, v in (before or {}).items()
           if isinstance(v, int) and not isinstance(v, bool)}
    name = code_name(code)
    out[name] = out.get(name, 0) + 1
    return out


def activation_refusal(text: str) -> VacateCode:
    """The ActivationRefused* code for why an activation was refused."""
    t = text.lower()
    for words, code in ((("no such claim",), VacateCode.ActivationRefusedClaimNotFound),
                        (("worklife",), VacateCode.ActivationRefusedWorklifeExpired),
                        (("cleaning",), VacateCode.ActivationRefusedStillCleaning),
                        (("broken",), VacateCode.ActivationRefusedBroken),
                        (("unhealthy",), VacateCode.ActivationRefusedUnhealthy),
                        (("requirements", "start ", "match"),
                         VacateCode.ActivationRefusedNoMatch),
                        (("not idle",), VacateCode.ActivationRefusedNotIdle),
                        (("not claimed", "unclaimed"), VacateCode.ActivationRefusedUnclaimed),
                        (("bad request", "missing", "invalid"),
                         VacateCode.ActivationRefusedBadRequest)):
        if any(w in t for w in words):
            return code
    return VacateCode.Unspecified
