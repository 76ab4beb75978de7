"""condor_config: reading, macro expansion, templates, defaults and typed access.

    from condorpy.config import Config, load_config, DetectedFacts

Every package reads knobs through :class:`KnobReader` (which ``Config`` satisfies):
the typed getters are the only place knob text becomes a boolean or a number.
"""

from __future__ import annotations

from condorpy.config.config import DEFAULT_CONFIG_PATH, Config, load_config
from condorpy.config.facts import DetectedFacts, LazyFacts, host_facts
from condorpy.config.protocol import KnobReader, KnobTexts
from condorpy.config.reader import Entry
from condorpy.config.typed import boolean_value

__all__ = ["Config", "DEFAULT_CONFIG_PATH", "DetectedFacts", "Entry", "KnobReader", "LazyFacts",
           "KnobTexts", "boolean_value", "host_facts", "load_config"]
