"""Reference side of the template tests: every name a configuration defines.

Reads {"base": path, "cases": [{"id": ..., "config": path}]} on stdin and prints, for
each case, either {"error": text} (HTCondor refuses the file: its reader exits, so each
case is read in a forked child) or {"values": {NAME: value}} for every name whose value
differs from the base configuration's.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _plain(value: Any) -> Any:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"float": value}
    return value


def _read(htcondor2: Any, path: str, also: Any = ()) -> dict[str, Any]:
    os.environ["CONDOR_CONFIG"] = path
    htcondor2.reload_config()
    out = {}
    # keys() leaves out a knob whose value is empty, so the base's names are asked for
    # too: a template that empties one must show as a change (None, or the table
    # default where the bindings read the knob through param_integer and the like)
    for name in set(htcondor2.param.keys()) | set(also):
        try:
            out[name] = _plain(htcondor2.param.get(name))
            if out[name] is None:
                del out[name]
        except Exception as exc:  # a value the bindings cannot convert
            out[name] = {"error": str(exc)}
    return out


def main() -> int:
    request = json.load(sys.stdin)
    os.environ["CONDOR_CONFIG"] = request["base"]
    import htcondor2  # imported after CONDOR_CONFIG is set, as the bindings require
    base = _read(htcondor2, request["base"])
    results = {}
    for case in request["cases"]:
        rfd, wfd = os.pipe()
        errfile = case["config"] + ".stderr"
        pid = os.fork()
        if pid == 0:  # the child reads one configuration and reports through the pipe
            os.close(rfd)
            fd = os.open(errfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            values = _read(htcondor2, case["config"], base)
            changed = {k: values.get(k) for k in set(values) | set(base)
                       if base.get(k) != values.get(k)}
            with os.fdopen(wfd, "w") as fh:
                json.dump({"values": changed}, fh)
            os._exit(0)
        os.close(wfd)
        with os.fdopen(rfd) as fh:
            data = fh.read()
        os.waitpid(pid, 0)
        if data:
            results[case["id"]] = json.loads(data)
        else:
            with open(errfile) as fh:
                results[case["id"]] = {"error": fh.read().strip()}
    json.dump({"base": base, "results": results}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
