"""The host's computed configuration macros, measured by the machine probes.

The configuration layer cannot import the probes (it sits below them), so whoever
loads a configuration for this host measures it here and hands the facts down; as
:class:`~condorpy.config.LazyFacts`, so that the probes run (and load) only when a knob
that is read depends on them.
"""

from __future__ import annotations

from dataclasses import replace

from condorpy.config import DetectedFacts, LazyFacts, host_facts

# Every name detected_facts() (machine/probe.py) may return.
PROBED_NAMES = frozenset({
    "DETECTED_CPUS", "DETECTED_CORES", "DETECTED_PHYSICAL_CPUS", "DETECTED_CPUS_LIMIT",
    "DETECTED_MEMORY", "FULL_HOSTNAME", "HOSTNAME", "IP_ADDRESS", "IPV4_ADDRESS",
    "IPV6_ADDRESS", "ARCH", "OPSYS", "OPSYSVER", "OPSYSANDVER", "OPSYSMAJORVER", "OPSYSNAME",
    "OPSYSLONGNAME", "OPSYSSHORTNAME", "OPSYSLEGACY", "UNAME_ARCH", "UNAME_OPSYS"})


def probed_facts() -> DetectedFacts:
    from condorpy.machine.probe import detected_facts
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


def lazy_probed_facts() -> LazyFacts:
    """:func:`probed_facts`, measured the first time a knob needs one of them."""
    return LazyFacts(probed_facts, PROBED_NAMES)
