"""The host's computed configuration macros, measured by the machine probes.

The configuration layer cannot import the probes (it sits below them), so whoever
loads a configuration for this host measures it here and hands the facts down.
"""

from __future__ import annotations

from dataclasses import replace

from condorpy.config import DetectedFacts, host_facts
from condorpy.machine.probe import detected_facts


def probed_facts() -> DetectedFacts:
    facts = detected_facts()
    base = host_facts()

    def number(key: str, default: int) -> int:
        value = facts.get(key, "")
        return int(value) if value.isdigit() else default

    return replace(base, full_hostname=facts.get("FULL_HOSTNAME") or base.full_hostname,
                   cpus=number("DETECTED_CPUS", base.cpus),
                   cores=number("DETECTED_CORES", base.cores),
                   physical_cpus=number("DETECTED_PHYSICAL_CPUS", base.physical_cpus),
                   memory_mb=number("DETECTED_MEMORY", base.memory_mb),
                   arch=facts.get("ARCH") or base.arch, opsys=facts.get("OPSYS") or base.opsys,
                   ip_address=facts.get("IP_ADDRESS") or base.ip_address,
                   extra=facts)
