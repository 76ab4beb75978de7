"""Reference side of the typed-read differential test: runs in its own interpreter.

Reads a JSON list of texts on stdin and prints, for each, what HTCondor's own
``string_is_boolean_param``, ``string_is_long_param`` and ``string_is_double_param``
(from the htcondor2 wheel's libcondor_utils) make of it: a value, or null if refused.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import sys
from typing import Any


def main() -> int:
    import htcondor2  # loads the wheel's libraries
    libs = os.path.join(os.path.dirname(htcondor2.__file__), "..", "htcondor.libs")
    lib = ctypes.CDLL(glob.glob(os.path.join(libs, "libcondor_utils*.so"))[0])
    # the C++ functions, by their mangled names in HTCondor 25
    as_bool = lib._Z23string_is_boolean_paramPKcRbPN7classad7ClassAdES4_S0_
    as_bool.restype = ctypes.c_bool
    as_bool.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_bool), ctypes.c_void_p,
                        ctypes.c_void_p, ctypes.c_char_p]
    as_long = lib._Z20string_is_long_paramPKcRxPN7classad7ClassAdES4_S0_Pi
    as_long.restype = ctypes.c_bool
    as_long.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_longlong), ctypes.c_void_p,
                        ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    as_double = lib._Z22string_is_double_paramPKcRdPN7classad7ClassAdES4_S0_Pi
    as_double.restype = ctypes.c_bool
    as_double.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_double), ctypes.c_void_p,
                          ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    out: list[dict[str, Any]] = []
    for text in json.load(sys.stdin):
        raw = text.encode()
        b, i, d, why = ctypes.c_bool(), ctypes.c_longlong(), ctypes.c_double(), ctypes.c_int()
        out.append({
            "bool": b.value if as_bool(raw, ctypes.byref(b), None, None, None) else None,
            "int": i.value if as_long(raw, ctypes.byref(i), None, None, None,
                                      ctypes.byref(why)) else None,
            "float": d.value if as_double(raw, ctypes.byref(d), None, None, None,
                                          ctypes.byref(why)) else None,
        })
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
