"""Every built-in ClassAd function, merged into one name -> FunctionSpec table.

The strict functions live in one module per family, each exposing ``TABLE``; the lazy
ones that need the evaluator are in :mod:`.special`. A family module that is missing
or fails to import leaves its functions undefined (calls evaluate to ``error``) rather
than breaking the language.
"""

from __future__ import annotations

import importlib

from condorpy.classad.functions.registry import FunctionSpec, FunctionTable, merge_tables

FAMILIES = ("strings", "lists", "timefuncs", "math", "types", "versions", "regex",
            "stringlists", "envargs", "misc", "special")


def _load() -> dict[str, FunctionSpec]:
    tables: list[FunctionTable] = []
    for fam in FAMILIES:
        try:
            mod = importlib.import_module(f"{__name__}.{fam}")
        except ImportError:
            continue
        table = getattr(mod, "TABLE", None)
        if isinstance(table, FunctionTable):
            tables.append(table)
    return merge_tables(*tables)


FUNCTIONS: dict[str, FunctionSpec] = _load()
