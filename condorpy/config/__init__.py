"""condor_config: reading, macro expansion, templates, defaults and typed access.

    from condorpy.config import Config, load_config, DetectedFacts
"""

from __future__ import annotations

from condorpy.config.config import DEFAULT_CONFIG_PATH, Config, load_config
from condorpy.config.facts import DetectedFacts, host_facts
from condorpy.config.reader import Entry

__all__ = ["Config", "DEFAULT_CONFIG_PATH", "DetectedFacts", "Entry", "host_facts",
           "load_config"]
