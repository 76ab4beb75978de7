"""Functions that consult the system: userHome (the password database) and userMap
(the map files the configuration names, reached through ``CallContext.user_maps``)."""

from __future__ import annotations

import pwd

from condorpy.classad.functions.registry import CallContext, FunctionTable
from condorpy.classad.values import Error, Undefined, Value

TABLE = FunctionTable()


def home_of(user: str) -> str | None:
    try:
        home = pwd.getpwnam(user).pw_dir
    except (KeyError, ValueError, OSError):
        return None
    return home or None


@TABLE.strict("userHome", 1, 2, pure=False)
def user_home(user: Value, default: Value = None) -> Value:
    # an empty default counts as none
    has_default = type(default) is str and default != ""
    fallback: Value = default if has_default else Undefined
    if type(user) is not str:
        if has_default or user is Undefined:
            return fallback
        return Error
    if not user:
        return fallback
    home = home_of(user)
    return fallback if home is None else home


@TABLE.strict("userMap", 2, 4, needs_ctx=True, pure=False)
def user_map(ctx: CallContext, name: Value, subject: Value, preferred: Value = None,
             default: Value = None) -> Value:
    fallback: Value = Undefined if default is None else default
    if name is Error or subject is Error:
        return Error
    if type(name) is not str or type(subject) is not str:
        return fallback
    mapper = ctx.user_maps.get(name)
    if mapper is None:
        mapper = next((m for k, m in ctx.user_maps.items()
                       if k.lower() == name.lower()), None)
    if mapper is None:
        return fallback
    results = mapper(subject)
    if not results:
        return fallback
    if preferred is None:
        return ",".join(results)
    if type(preferred) is str:
        want = preferred.lower()
        for r in results:
            if r.lower() == want:
                return r
    return results[0]
