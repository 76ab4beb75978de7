"""Every built-in ClassAd function, merged into one name -> FunctionSpec table.

The strict functions live in one module per family, each exposing ``TABLE``; the lazy
ones that need the evaluator are in :mod:`.special`, :mod:`.eachcontext` and
:mod:`.references`. Every family is a plain import: a
broken one is an error at import time, not functions silently missing.
"""

from __future__ import annotations

from condorpy.classad.functions import (eachcontext, envargs, lists, math, misc,
                                        references, regex, special, stringlists, strings,
                                        timefuncs, types, versions)
from condorpy.classad.functions.registry import FunctionSpec, merge_tables

FAMILIES = (strings, lists, timefuncs, math, types, versions, regex, stringlists, envargs,
            misc, special, eachcontext, references)

FUNCTIONS: dict[str, FunctionSpec] = merge_tables(*(fam.TABLE for fam in FAMILIES))
