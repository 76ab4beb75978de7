"""ClassAds on a CEDAR stream, as HTCondor's ``putClassAd``/``getClassAd`` write and read them.

Facts (htcondor/htcondor ``src/condor_utils/classad_oldnew.cpp``, ``compat_classad.cpp``;
checked against a real 23.9.6 collector and tool, ``docs/pool-protocol.md``):

- An integer, the number of attributes; then one string per attribute,
  ``Name = <expression in old ClassAd syntax>``; then two more strings, the legacy
  MyType and TargetType, which current HTCondor sends empty (``MyType`` and
  ``TargetType`` travel as ordinary attributes).
- A private attribute (``Capability``, ``ChildClaimIds``, ``ClaimId``, ``ClaimIdList``,
  ``ClaimIds``, ``TransferKey`` and any name starting ``_condor_priv``) is sent as
  the marker string ``ZKM`` followed by its line as a secret; the pair counts as one
  attribute. A public ad leaves private attributes out altogether.
"""

from __future__ import annotations

from condorpy.classad import ClassAd
from condorpy.classad.ast import format_name, unparse
from condorpy.errors import ClassAdError, WireError
from condorpy.pool.cedar import Reader, Writer

SECRET_MARKER = "ZKM"
PRIVATE_ATTRS = frozenset(a.lower() for a in (
    "Capability", "ChildClaimIds", "ClaimId", "ClaimIdList", "ClaimIds", "TransferKey"))
MAX_ATTRS = 100_000


def is_private(name: str) -> bool:
    low = name.lower()
    return low in PRIVATE_ATTRS or low.startswith("_condor_priv")


def ad_lines(ad: ClassAd, *, private: bool = True) -> list[tuple[str, bool]]:
    """The ad's ``Name = expr`` lines, each with whether it is private; private ones
    only when ``private``."""
    out = []
    for name, expr in ad.items():
        secret = is_private(name)
        if secret and not private:
            continue
        out.append((f"{format_name(name)} = {unparse(expr.node, old=True)}", secret))
    return out


def put_classad(w: Writer, ad: ClassAd, *, private: bool = True) -> Writer:
    lines = ad_lines(ad, private=private)
    w.put_int(len(lines))
    for line, secret in lines:
        if secret:
            w.put_string(SECRET_MARKER)
            w.put_secret(line)
        else:
            w.put_string(line)
    # the legacy MyType and TargetType slots: empty, as current HTCondor sends them
    w.put_string("")
    w.put_string("")
    return w


def get_classad(r: Reader, what: str = "a ClassAd", *, max_attrs: int = MAX_ATTRS) -> ClassAd:
    """Read one ClassAd; a malformed one raises :class:`WireError` naming the peer."""
    n = r.get_int(f"the attribute count of {what}")
    if n < 0 or n > max_attrs:
        raise WireError(f"{what} claims {n} attributes (limit {max_attrs})", peer=r.peer)
    lines = []
    for i in range(n):
        line = r.get_str(f"attribute {i + 1} of {what}")
        if line == SECRET_MARKER:
            line = r.get_str(f"the secret attribute {i + 1} of {what}")
        if "\n" in line or "\r" in line:
            raise WireError(f"attribute {i + 1} of {what} spans lines", peer=r.peer)
        lines.append(line)
    my_type = r.get_string(f"the MyType of {what}") or ""
    target_type = r.get_string(f"the TargetType of {what}") or ""
    try:
        ad = ClassAd.parse_old("\n".join(lines), source=f"{what} from {r.peer}")
    except ClassAdError as exc:
        raise WireError(f"bad attribute in {what}: {exc.message.splitlines()[0]}",
                        peer=r.peer) from None
    if my_type and "MyType" not in ad:
        ad["MyType"] = my_type
    if target_type and "TargetType" not in ad:
        ad["TargetType"] = target_type
    return ad
