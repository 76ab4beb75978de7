"""Custom machine resources: MACHINE_RESOURCE_<name>, MACHINE_RESOURCE_INVENTORY_<name>, GPUs.

The rules are HTCondor's:

* ``MACHINE_RESOURCE_<name>`` is a number (a fungible quantity) or a list of ids.
* ``MACHINE_RESOURCE_INVENTORY_<name>`` is a command whose output is a ClassAd with
  ``Detected<name>`` (a quantity or ``"id1, id2"``), optionally ``Offline<name>``,
  nested property ads (``Common`` for every id, one per id matched by its ``id``), and
  other attributes that the machine ad publishes as they are.
* ``OFFLINE_MACHINE_RESOURCE_<name>`` takes ids out of service.
* Without either knob for GPUs, ``STARTD_DETECT_GPUS`` (default
  ``-properties $(GPU_DISCOVERY_EXTRA)``) runs GPU discovery; ``false``/``0`` disables it.
* When ``MACHINE_RESOURCE_NAMES`` is set, resources not named there are ignored.

A command named ``condor_gpu_discovery`` (any directory) is served by condorpy's
built-in discovery; any other command runs as a child process, without a shell, under
a timeout. Failures and unreadable output raise :class:`InventoryError` naming the knob.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from condorpy.config import KnobTexts, boolean_value
from condorpy.inputs import NotTextError, decode_utf8
from condorpy.machine import gpus
from condorpy.machine.classad_text import InventoryError, parse_ad_lines
from condorpy.machine.roots import HostRoots
from condorpy.slots.inventory import CustomResource

RESERVED_NAMES = frozenset({"CPU", "CPUS", "DISK", "SWAP", "MEM", "MEMORY", "RAM"})
INVENTORY_TIMEOUT = 60.0


@dataclass(frozen=True)
class _Spec:
    name: str
    knob: str
    value: str
    inventory: bool


def split_ids(text: str) -> list[str]:
    return [t for t in re.split(r"[\s,]+", text.strip()) if t]


def _quantity_or_ids(text: str) -> tuple[float, list[str]]:
    try:
        return float(text.strip()), []
    except ValueError:
        ids = split_ids(text)
        return float(len(ids)), ids


def run_inventory(knob: str, command: str, roots: HostRoots,
                  timeout: float = INVENTORY_TIMEOUT) -> str:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InventoryError(f"{knob}: cannot split the command line {command!r}: {exc}") from None
    if not argv:
        raise InventoryError(f"{knob}: the command is empty")
    if PurePath(argv[0]).name == "condor_gpu_discovery":
        try:
            return gpus.discover(argv[1:], roots)
        except ValueError as exc:
            raise InventoryError(f"{knob}: condor_gpu_discovery {' '.join(argv[1:])}: {exc}") from None
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        raise InventoryError(f"{knob}: command not found: {argv[0]}") from None
    except PermissionError:
        raise InventoryError(f"{knob}: command is not executable: {argv[0]}") from None
    except subprocess.TimeoutExpired:
        raise InventoryError(f"{knob}: {argv[0]} did not finish within {timeout:g} seconds") from None
    except OSError as exc:
        raise InventoryError(f"{knob}: cannot run {argv[0]}: {exc.strerror}") from None
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", "replace")   # only quoted in the message
        err = (stderr.strip().splitlines() or [""])[-1]
        raise InventoryError(f"{knob}: {argv[0]} exited with status {proc.returncode}"
                             + (f": {err}" if err else ""))
    try:
        return decode_utf8(proc.stdout, f"the output of {argv[0]}")
    except NotTextError as exc:
        raise InventoryError(f"{knob}: {exc}") from None


def resource_from_ad(name: str, ad: dict[str, Any], knob: str, offline_knob: str | None) -> CustomResource:
    """Turn an inventory ad into a resource, as HTCondor's startd does."""
    lower = {k.lower(): k for k in ad}
    offline_ids: list[str] = []
    off_key = lower.get(f"offline{name}".lower())
    if off_key is not None and isinstance(ad[off_key], str):
        offline_ids = split_ids(ad[off_key])
    elif offline_knob:
        offline_ids = split_ids(offline_knob)

    det_key = lower.get(f"detected{name}".lower())
    if det_key is None:
        raise InventoryError(f"{knob}: the output has no Detected{name} attribute")
    detected = ad[det_key]
    ids: list[str] = []
    if isinstance(detected, str):
        count, ids = _quantity_or_ids(detected)
    elif isinstance(detected, (int, float)) and not isinstance(detected, bool):
        count = float(detected)
    else:
        raise InventoryError(f"{knob}: Detected{name} must be a number or a string of ids, "
                             f"got {detected!r}")

    props: dict[str, dict[str, Any]] = {}
    extra: dict[str, Any] = {}
    common = next((v for k, v in ad.items() if k.lower() == "common" and isinstance(v, dict)), None)
    for id_ in ids:
        if common is not None:
            props.setdefault(id_, {}).update(common)
    for key, value in ad.items():
        # what is left of the inventory ad, Detected<name> included (HTCondor's machine
        # ad says DetectedGPUs = "GPU-a0223334, ..."), goes into the machine ad
        if key.lower() == name.lower():
            continue
        if isinstance(value, dict):
            if value is common:
                continue
            rid = value.get("id", key)
            if isinstance(rid, str) and rid in ids:
                props.setdefault(rid, {}).update({k: v for k, v in value.items() if k != "id"})
                continue
        extra[key] = value

    online = [i for i in ids if i not in offline_ids]
    offline_count = len(ids) - len(online) if ids else len(offline_ids)
    if ids and offline_ids and off_key is None:
        extra[f"Offline{name}"] = ", ".join(i for i in ids if i in offline_ids)
    return CustomResource(name=name, ids=tuple(online), count=max(count - offline_count, 0),
                          properties=props, extra_attrs=extra)


def _canonical(name: str) -> str:
    return "GPUs" if name.upper() == "GPUS" else name


def _candidate_knobs(cfg: KnobTexts) -> list[str]:
    """Every MACHINE_RESOURCE_* knob name; when the configuration cannot list its names,
    those that MACHINE_RESOURCE_NAMES (and GPUs) imply."""
    names = list(cfg.names())
    seen = {n.upper() for n in names}
    for res in split_ids(cfg.get("MACHINE_RESOURCE_NAMES") or "") + ["GPUs"]:
        for knob in (f"MACHINE_RESOURCE_{res}", f"MACHINE_RESOURCE_INVENTORY_{res}"):
            if knob.upper() not in seen:
                names.append(knob)
                seen.add(knob.upper())
    return names


def _specs(cfg: KnobTexts) -> list[_Spec]:
    specs: dict[str, _Spec] = {}
    for knob in _candidate_knobs(cfg):
        up = knob.upper()
        if not up.startswith("MACHINE_RESOURCE_") or up == "MACHINE_RESOURCE_NAMES":
            continue
        value = cfg.get(knob)
        if value is None:
            continue
        rest = knob[len("MACHINE_RESOURCE_"):]
        inventory = rest.upper().startswith("INVENTORY_")
        name = _canonical(rest[len("INVENTORY_"):] if inventory else rest)
        if not name:
            continue
        # an inventory command wins over a plain quantity for the same name
        if name.upper() in specs and not inventory:
            continue
        specs[name.upper()] = _Spec(name, knob, value, inventory)
    return list(specs.values())


def custom_resources(cfg: KnobTexts, roots: HostRoots,
                     timeout: float = INVENTORY_TIMEOUT) -> dict[str, CustomResource]:
    out: dict[str, CustomResource] = {}
    specs = _specs(cfg)
    if not any(s.name.upper() == "GPUS" for s in specs):
        detect = cfg.get("STARTD_DETECT_GPUS")
        if detect is None:
            detect = "-properties " + (cfg.get("GPU_DISCOVERY_EXTRA") or "")
        detect = detect.strip()
        # a boolean value switches discovery off (false); anything else is arguments
        switch = boolean_value(detect) if detect else False
        if switch is True:
            raise InventoryError("STARTD_DETECT_GPUS: expects condor_gpu_discovery arguments "
                                 "(or false to disable), not a boolean")
        if switch is None:
            specs.append(_Spec("GPUs", "STARTD_DETECT_GPUS",
                               "condor_gpu_discovery " + detect, True))

    for spec in specs:
        if spec.name.upper() in RESERVED_NAMES:
            raise InventoryError(f"{spec.knob}: '{spec.name}' is a reserved resource name")
        offline = cfg.get(f"OFFLINE_MACHINE_RESOURCE_{spec.name}")
        if spec.inventory:
            text = run_inventory(spec.knob, spec.value, roots, timeout)
            ad = parse_ad_lines(text, f"output of {spec.knob}")
            res = resource_from_ad(spec.name, ad, spec.knob, offline)
        elif "\n" in spec.value:
            res = resource_from_ad(spec.name, parse_ad_lines(spec.value, spec.knob), spec.knob, offline)
        else:
            count, ids = _quantity_or_ids(spec.value)
            if count < 0:
                raise InventoryError(f"{spec.knob}: a resource quantity cannot be negative ({spec.value})")
            off = split_ids(offline) if offline else []
            online = [i for i in ids if i not in off]
            if ids:
                count = float(len(online))
            res = CustomResource(name=spec.name, ids=tuple(online), count=count)
        out[spec.name] = res

    allowed = cfg.get("MACHINE_RESOURCE_NAMES")
    if allowed is not None:
        keep = {n.upper() for n in split_ids(allowed)}
        out = {k: v for k, v in out.items() if k.upper() in keep}
    return out
