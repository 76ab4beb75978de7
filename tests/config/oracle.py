"""Reference side of the differential tests: runs in its own interpreter.

Reads a JSON request on stdin: {"cases": [{"config": path, "env": {...},
"names": [...], "subsystem": "TOOL"}]}; for each case points CONDOR_CONFIG at the file, sets the
environment, re-reads HTCondor's configuration and prints the values of the names.
One interpreter serves every case (htcondor2.reload_config re-reads the chain).
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


def main() -> int:
    request = json.load(sys.stdin)
    first = request["cases"][0]["config"] if request["cases"] else os.devnull
    os.environ["CONDOR_CONFIG"] = first
    import htcondor2  # imported after CONDOR_CONFIG is set, as the bindings require
    facts_names = ["FULL_HOSTNAME", "DETECTED_CPUS", "DETECTED_CORES",
                   "DETECTED_PHYSICAL_CPUS", "DETECTED_MEMORY", "ARCH", "OPSYS",
                   "UNAME_ARCH", "UNAME_OPSYS", "IP_ADDRESS", "IPV4_ADDRESS", "IPV6_ADDRESS",
                   "USERNAME"]
    out: dict[str, Any] = {"facts": {n: _plain(htcondor2.param.get(n)) for n in facts_names},
                           "results": []}
    base_env = dict(os.environ)
    for case in request["cases"]:
        os.environ.clear()
        os.environ.update(base_env)
        os.environ.update(case.get("env", {}))
        os.environ["CONDOR_CONFIG"] = case["config"]
        htcondor2.set_subsystem(case.get("subsystem", "TOOL"))
        htcondor2.reload_config()
        values = {}
        for name in case["names"]:
            try:
                values[name] = _plain(htcondor2.param.get(name))
            except Exception as exc:  # a value the bindings cannot convert
                values[name] = {"error": str(exc)}
        out["results"].append(values)
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
