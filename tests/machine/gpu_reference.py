"""What HTCondor's own ``condor_gpu_discovery -simulate`` prints, recorded from the real
binaries (23.9.6 in the reference pool's trixie chroot, 25.14.1 in its forky one), and
how to compare it with condorpy's, device by device and attribute by attribute.

``data/gpu_discovery_reference.json`` maps each argument list to the 23.9.6 output and,
where 25.14.1 prints something else, to that too. condorpy prints what 25.14.1 prints.
23.9.6 differs in two places only, both fixed in 25.x: its MIG instances lack the
parent's Capability, CoresPerCU and DevicePciBusId, and with ``-divide`` it leaves the
undivided GlobalMemoryMb in Common (hiding each device's divided one).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

REFERENCE: dict[str, dict[str, str]] = json.loads(
    (Path(__file__).parent / "data" / "gpu_discovery_reference.json").read_text())

# The attributes in which 23.9.6 may differ from condorpy (and 25.x), by kind of device.
MIG_ONLY_IN_25 = frozenset({"Capability", "CoresPerCU", "DevicePciBusId"})
DIVIDE_ONLY_IN_25 = frozenset({"GlobalMemoryMb"})

_PROP = re.compile(r'(\w+)=("[^"]*"|[^;]*); ')


def expected(args: str) -> str:
    """What condorpy must print for ``args``: what 25.14.1 prints."""
    rec = REFERENCE[args]
    return rec.get("25.14.1", rec["23.9.6"])


def devices(text: str) -> tuple[str, dict[str, dict[str, str]]]:
    """(the Detected line's value, each device's properties with Common merged in) of
    a nested output, as the startd stores them."""
    detected = ""
    common: dict[str, str] = {}
    per_device: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if name.startswith("Detected"):
            detected = value
        elif value.startswith("[ "):
            props = dict(_PROP.findall(value))
            if name == "Common":
                common = props
            else:
                per_device[props.pop("id").strip('"')] = props
    return detected, {gid: {**common, **own} for gid, own in per_device.items()}


def differences(theirs: str, ours: str) -> list[str]:
    """Each device attribute whose value differs, as ``id.Attr: theirs != ours``."""
    t_detected, t_devs = devices(theirs)
    o_detected, o_devs = devices(ours)
    out = [] if t_detected == o_detected else [f"Detected: {t_detected} != {o_detected}"]
    for gid in sorted(set(t_devs) | set(o_devs)):
        t, o = t_devs.get(gid, {}), o_devs.get(gid, {})
        out += [f"{gid}.{k}: {t.get(k)} != {o.get(k)}" for k in sorted(set(t) | set(o))
                if t.get(k) != o.get(k)]
    return out


def only_version_differences(theirs_23: str, ours: str, args: str) -> list[str]:
    """The differences between a 23.9.6 output and condorpy's that are not the two
    named 23.9 faults (empty when condorpy differs from 23.9.6 only by those)."""
    allowed = set(DIVIDE_ONLY_IN_25) if "-divide" in args else set()
    left = []
    for diff in differences(theirs_23, ours):
        gid, _, rest = diff.partition(".")
        attr = rest.partition(":")[0]
        if attr in allowed or (gid.startswith("MIG-") and attr in MIG_ONLY_IN_25):
            continue
        left.append(diff)
    return left
