"""Shared fixtures for the config tests: pinned machine facts."""

from __future__ import annotations

from condorpy.config import Config, DetectedFacts

FACTS = DetectedFacts(full_hostname="ep1.example.org", cpus=8, cores=4, physical_cpus=4,
                      memory_mb=16000, ip_address="192.0.2.10", username="condor",
                      pid=100, ppid=1)


def cfg(text: str, **kw: object) -> Config:
    return Config.from_text(text, source="test.conf", detected=FACTS, **kw)  # type: ignore[arg-type]
