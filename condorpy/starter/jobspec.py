"""What the starter needs from the job ad and the slot ad, checked once, as records.

The ads come in as plain mappings of already evaluated attribute values, so this
module does not depend on the ClassAd engine.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass

from condorpy.errors import JobAdError
from condorpy.starter.arguments import job_arguments, job_environment
from condorpy.starter.holds import HoldCode, JobHold


def ad_value(ad: Mapping[str, object], name: str) -> object:
    """ClassAd attribute names are case-insensitive."""
    if name in ad:
        return ad[name]
    low = name.lower()
    for key, value in ad.items():
        if key.lower() == low:
            return value
    return None


def _str(ad: Mapping[str, object], name: str) -> str | None:
    value = ad_value(ad, name)
    return value if isinstance(value, str) and value != "" else None


def _raw_str(ad: Mapping[str, object], name: str) -> str | None:
    value = ad_value(ad, name)
    return value if isinstance(value, str) else None


def _num(ad: Mapping[str, object], name: str) -> float | None:
    value = ad_value(ad, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def parse_signal(value: object, *, attribute: str = "KillSig") -> int:
    """A signal of this platform given by number or by name (``SIGTERM``, ``TERM``)."""
    if isinstance(value, bool):
        raise JobAdError(f"{attribute} must be a signal name or number", attribute=attribute)
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip().upper()
        if text.isdigit():
            number = int(text)
        else:
            name = text if text.startswith("SIG") else "SIG" + text
            try:
                return int(signal.Signals[name])
            except KeyError:
                pass
    # A number the kernel refuses would only fail at the soft kill, with the job running.
    if number is not None and number in signal.valid_signals():
        return number
    raise JobAdError(f"{attribute} {value!r} is not a signal", attribute=attribute)


def kill_signal(value: object) -> tuple[int, str | None]:
    """The soft-kill signal of a KillSig value, and a note when it had to be replaced:
    like HTCondor's starter, a KillSig that names no signal falls back to SIGTERM
    rather than failing the job."""
    if value is None:
        return int(signal.SIGTERM), None
    try:
        return parse_signal(value), None
    except JobAdError as exc:
        return int(signal.SIGTERM), f"{exc}; using SIGTERM"


@dataclass(frozen=True)
class JobIdentity:
    """What is known of a job even when its ad cannot be run: enough to choose its
    user and to write a held event to its log."""
    job_id: str
    cluster: int
    proc: int
    owner: str | None
    iwd: str | None
    user_log: str | None

    @classmethod
    def from_ad(cls, ad: Mapping[str, object]) -> JobIdentity:
        cluster = int(_num(ad, "ClusterId") or 0)
        proc = int(_num(ad, "ProcId") or 0)
        return cls(job_id=f"{cluster}.{proc}", cluster=cluster, proc=proc,
                   owner=_str(ad, "Owner"), iwd=_str(ad, "Iwd"),
                   user_log=_str(ad, "StarterUserLog"))


@dataclass(frozen=True)
class JobSpec:
    job_id: str
    cmd: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    iwd: str | None
    stdin: str | None
    stdout: str | None
    stderr: str | None
    owner: str | None
    kill_sig: int
    kill_sig_timeout_s: float | None
    user_log: str | None
    cluster: int
    proc: int
    kill_sig_note: str | None = None    # why KillSig was replaced by SIGTERM, if it was

    @classmethod
    def from_ad(cls, ad: Mapping[str, object]) -> JobSpec:
        ident = JobIdentity.from_ad(ad)
        job_id = ident.job_id
        cmd = _str(ad, "Cmd")
        if cmd is None and (ad_value(ad, "WantDocker") is True
                            or ad_value(ad, "WantContainer") is True):
            cmd = ""          # a container job may run its image's own entry point
        if cmd is None:
            raise JobHold("job ad has no Cmd: nothing to execute",
                          HoldCode.FAILED_TO_CREATE_PROCESS, attribute="Cmd", job=job_id)
        try:
            args = job_arguments(_raw_str(ad, "Arguments"), _raw_str(ad, "Args"))
            env = job_environment(_raw_str(ad, "Environment"), _raw_str(ad, "Env"))
        except JobAdError as exc:
            raise JobHold(str(exc), HoldCode.FAILED_TO_CREATE_PROCESS,
                          attribute=exc.attribute, job=job_id) from None
        kill_sig, kill_sig_note = kill_signal(ad_value(ad, "KillSig"))
        return cls(
            job_id=job_id, cmd=cmd, args=tuple(args), env=tuple(env.items()),
            iwd=ident.iwd, stdin=_str(ad, "In"), stdout=_str(ad, "Out"),
            stderr=_str(ad, "Err"), owner=ident.owner, kill_sig=kill_sig,
            kill_sig_timeout_s=_num(ad, "KillSigTimeout"),
            user_log=ident.user_log, cluster=ident.cluster, proc=ident.proc,
            kill_sig_note=kill_sig_note)


_SLOT_NAME = re.compile(r"^slot(\d+)(?:_(\d+))?(?:@|$)")


@dataclass(frozen=True)
class SlotSpec:
    name: str
    slot_id: int
    cpus: float
    memory_mb: int | None
    virtual_memory_kb: int | None
    assigned_gpus: tuple[str, ...]

    @classmethod
    def from_ad(cls, ad: Mapping[str, object]) -> SlotSpec:
        name = _str(ad, "Name") or "slot1@localhost"
        sid = _num(ad, "SlotID")
        if sid is None:
            m = _SLOT_NAME.match(name)
            sid = float(m.group(1)) if m else 1.0
        gpus_raw = _str(ad, "AssignedGPUs") or ""
        gpus = tuple(g.strip() for g in gpus_raw.replace(" ", ",").split(",") if g.strip())
        mem = _num(ad, "Memory")
        vm = _num(ad, "VirtualMemory")
        return cls(name=name, slot_id=int(sid), cpus=_num(ad, "Cpus") or 1.0,
                   memory_mb=int(mem) if mem is not None else None,
                   virtual_memory_kb=int(vm) if vm is not None else None,
                   assigned_gpus=gpus)

    @property
    def short_name(self) -> str:
        """``slot1_2`` from ``slot1_2@host``: the value of ``_CONDOR_SLOT``."""
        return self.name.split("@", 1)[0]
