"""Sizing a dynamic slot for a job: what a partitionable slot gives, or why it will not.

The job's requests (`RequestCpus`, `RequestMemory`, `RequestDisk`, `Request<name>`)
are modified by `MODIFY_REQUEST_EXPR_REQUEST*` (round up so the d-slot is reusable),
or, when the slot type has a consumption policy, replaced by its `CONSUMPTION_<res>`
expressions. Devices are chosen by `Require<name>` evaluated against each free device's
property ad. Nothing here mutates: the manager applies the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from condorpy.classad import ClassAd, Error, Expr, Undefined, parse_expr
from condorpy.errors import ClassAdError
from condorpy.slots.model import Refusal
from condorpy.slots.resources import Resources

# Request attribute and default modify expression of each standard resource.
STANDARD_REQUESTS = {"Cpus": "RequestCpus", "Memory": "RequestMemory", "Disk": "RequestDisk"}
DEFAULT_MODIFY = {
    "Cpus": "quantize(RequestCpus, {1})",
    "Memory": "quantize(RequestMemory, {128})",
    "Disk": "quantize(RequestDisk, {1024})",
}
DEFAULT_CONSUMPTION = {
    "Cpus": "quantize(target.RequestCpus, {1})",
    "Memory": "quantize(target.RequestMemory, {128})",
    "Disk": "quantize(target.RequestDisk, {1024})",
}
# condor_submit's defaults (JOB_DEFAULT_REQUEST*, as HTCondor 25 sets them), used when
# a job ad lacks a request.
DEFAULT_JOB_REQUESTS = {
    "Cpus": "1",
    "Memory": "128",
    "Disk": "MAX({1024, (TransferInputSizeMB + 1) * 1.25}) * 1024",
}
_UNITS = {"Cpus": "", "Memory": " MiB", "Disk": " KiB"}


@dataclass(frozen=True)
class CarvePolicy:
    """How one partitionable slot sizes its d-slots (read from the configuration)."""

    modify: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_MODIFY))
    job_defaults: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_JOB_REQUESTS))
    consumption: bool = False
    consumption_exprs: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CONSUMPTION))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is Undefined or value is Error:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _evaluate(text: str, my: ClassAd, target: ClassAd | None) -> Any:
    try:
        return parse_expr(text).evaluate(my=my, target=target)
    except ClassAdError:
        return Error


def _modified_request(resource: str, request_attr: str, job: ClassAd, slot_ad: ClassAd,
                      policy: CarvePolicy) -> float | Refusal:
    modify = policy.modify.get(resource)
    raw = _number(_evaluate(request_attr, job, slot_ad))
    if raw is None:
        # The job has no usable request: fill in condor_submit's default, then modify
        # that value as if the job had carried it.
        default_text = policy.job_defaults.get(resource)
        raw = _number(_evaluate(default_text, job, slot_ad)) if default_text else None
        if raw is None:
            return Refusal(f"the job has no usable {request_attr}")
        job = job.copy()
        job[request_attr] = raw
    if not modify:
        return raw
    value = _number(_evaluate(modify, job, slot_ad))
    if value is None:
        return Refusal(f"MODIFY_REQUEST_EXPR_{request_attr.upper()} ({modify}) does not "
                       f"give a number for this job")
    return value


def _consumed(resource: str, job: ClassAd, slot_ad: ClassAd, policy: CarvePolicy) -> float | Refusal:
    text = policy.consumption_exprs.get(resource, f"target.Request{resource}")
    value = _evaluate(text, slot_ad, job)
    if value is Undefined and resource not in STANDARD_REQUESTS:
        return 0.0
    number = _number(value)
    if number is None:
        return Refusal(f"consumption policy for {resource} ({text}) does not give a number "
                       "for this job")
    return number


def _custom_request(name: str, job: ClassAd, slot_ad: ClassAd,
                    policy: CarvePolicy) -> float | Refusal:
    value = _evaluate(f"Request{name}", job, slot_ad)
    if value is Undefined:
        return 0.0
    modify = policy.modify.get(name)
    if modify:
        value = _evaluate(modify, job, slot_ad)
    number = _number(value)
    if number is None:
        return Refusal(f"the job's Request{name} is not a number")
    return number


def size_request(job: ClassAd, slot_ad: ClassAd, free: Resources,
                 device_props: Mapping[str, Mapping[str, Mapping[str, Any]]],
                 policy: CarvePolicy, slot_name: str) -> Resources | Refusal:
    """The resources a d-slot for ``job`` would take from a p-slot with ``free`` left,
    or a :class:`Refusal` saying what does not fit. ``device_props`` maps a device
    resource to its devices' property attributes."""
    amounts: dict[str, float] = {}
    for resource, attr in STANDARD_REQUESTS.items():
        got = (_consumed(resource, job, slot_ad, policy) if policy.consumption
               else _modified_request(resource, attr, job, slot_ad, policy))
        if isinstance(got, Refusal):
            return got
        amounts[resource] = got
    custom: dict[str, float] = {}
    devices: dict[str, tuple[str, ...]] = {}
    for name in free.custom:
        if policy.consumption:
            got = _consumed(name, job, slot_ad, policy)
        else:
            got = _custom_request(name, job, slot_ad, policy)
        if isinstance(got, Refusal):
            return got
        if got < 0:
            return Refusal(f"the job requests a negative amount of {name}")
        custom[name] = got
        if name in free.devices and got > 0:
            chosen = _choose_devices(name, math.ceil(got), job, free.devices[name],
                                     device_props.get(name, {}), slot_name)
            if isinstance(chosen, Refusal):
                return chosen
            devices[name] = chosen
            custom[name] = len(chosen)

    missing = _unknown_requests(job, free, slot_ad)
    if missing:
        return Refusal(f"the job requests {missing}, which {slot_name} does not have")
    wanted = Resources(int(math.ceil(amounts["Cpus"])), int(math.ceil(amounts["Memory"])),
                       int(math.ceil(amounts["Disk"])), 0, custom, devices)
    if wanted.cpus < 0 or wanted.memory_mb < 0 or wanted.disk_kb < 0:
        return Refusal("the job requests a negative amount of a resource")
    short = free.shortfall(wanted)
    if short is not None:
        resource, want, have = short
        unit = _UNITS.get(resource, "")
        return Refusal(f"insufficient {resource}: the job needs {_fmt(want)}{unit} after "
                       f"rounding, {slot_name} has {_fmt(have)}{unit} left")
    return wanted


_NOT_RESOURCES = {"cpus", "memory", "disk", "virtualmemory"}


def _unknown_requests(job: ClassAd, free: Resources, slot_ad: ClassAd) -> str | None:
    """A positive `Request<name>` for a resource this slot does not offer at all.
    (`Requested*` attributes, such as RequestedCatalogs, are not resource requests.)"""
    offered = {name.lower() for name in free.custom}
    for attr in job:
        lowered = attr.lower()
        if not lowered.startswith("request") or lowered.startswith("requested"):
            continue
        name = attr[len("request"):]
        if not name or name.lower() in _NOT_RESOURCES or name.lower() in offered:
            continue
        amount = _number(_evaluate(attr, job, slot_ad))
        if amount is not None and amount > 0:
            return f"{_fmt(amount)} {name}"
    return None


def _fmt(v: float) -> str:
    return str(int(v)) if v == int(v) else f"{v:g}"


def _choose_devices(name: str, count: int, job: ClassAd, free_ids: tuple[str, ...],
                    props: Mapping[str, Mapping[str, Any]], slot_name: str) \
        -> tuple[str, ...] | Refusal:
    constraint = job.lookup(f"Require{name}")
    qualifying = [d for d in free_ids
                  if constraint is None or _satisfies(constraint, d, props.get(d, {}), job)]
    if len(qualifying) < count:
        what = f"{name} matching Require{name}" if constraint else name
        return Refusal(f"insufficient {what}: the job needs {count}, {slot_name} has "
                       f"{len(qualifying)} free")
    return tuple(qualifying[:count])


def device_ad(device_id: str, props: Mapping[str, Any]) -> ClassAd:
    ad = ClassAd()
    for key, value in props.items():
        ad[key] = value
    if "Id" not in props:
        ad["Id"] = device_id
    return ad


def _satisfies(constraint: Expr, device_id: str, props: Mapping[str, Any], job: ClassAd) -> bool:
    try:
        return constraint.evaluate(my=device_ad(device_id, props), target=job) is True
    except ClassAdError:
        return False


def device_matches(constraint: str, device_id: str, props: Mapping[str, Any],
                   job: ClassAd | None = None) -> bool:
    """Does a device qualify? A string-literal constraint names a device id; any other
    expression is evaluated with the device's property ad as MY (and the job as TARGET)."""
    try:
        expr = parse_expr(constraint)
        value = expr.evaluate(my=device_ad(device_id, props), target=job)
    except ClassAdError:
        return False
    if isinstance(value, str):
        return value == device_id
    return value is True
