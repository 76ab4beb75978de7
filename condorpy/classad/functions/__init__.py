"""Every built-in ClassAd function, merged into one name -> FunctionSpec table.

The strict functions live in one module per family, each exposing ``TABLE``; the lazy
ones that need the evaluator are in :mod:`.special`, :mod:`.eachcontext` and
:mod:`.references`. The families are imported together, the first time a name is looked
up: an expression is compiled on its first evaluation, so a command that evaluates no
call (``condorpy q`` reading its job ads) never loads them, and a broken family is still
an error at the first lookup, not functions silently missing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from condorpy.classad.functions.registry import FunctionSpec, merge_tables


def _families() -> dict[str, FunctionSpec]:
    from condorpy.classad.functions import (eachcontext, envargs, lists, math, misc,
                                            references, regex, special, stringlists,
                                            strings, timefuncs, types, versions)
    families = (strings, lists, timefuncs, math, types, versions, regex, stringlists,
                envargs, misc, special, eachcontext, references)
    return merge_tables(*(fam.TABLE for fam in families))


class BuiltinFunctions(Mapping[str, FunctionSpec]):
    """The table of built-in functions, keyed by lower-case name, made on first use."""

    def __init__(self) -> None:
        self._table: dict[str, FunctionSpec] | None = None

    def _specs(self) -> dict[str, FunctionSpec]:
        if self._table is None:
            self._table = _families()
        return self._table

    def __getitem__(self, name: str) -> FunctionSpec:
        return self._specs()[name]

    def get(self, name: str, default: FunctionSpec | None = None  # type: ignore[override]
            ) -> FunctionSpec | None:
        return self._specs().get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs())

    def __len__(self) -> int:
        return len(self._specs())


FUNCTIONS = BuiltinFunctions()
