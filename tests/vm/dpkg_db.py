"""A small dpkg database for the systemd lane's VM.

The VM's root is the host's, so dpkg inside it reads the host's database: every
installed package's file list (over 100,000 paths) before each install, remove and
purge, which under emulation costs more than a minute a run. Inside the VM (never on
the host) the database is cut down to the package's own dependencies, followed to
the end: dpkg still checks them, runs the maintainer scripts and enables and starts
the unit as on a full machine; it no longer knows of packages the .deb has nothing to
do with (their files, their triggers). Lintian and the pristine-Debian lane install
the same package against a whole system.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

DPKG = Path("/var/lib/dpkg")
_FOLLOWED = ("Pre-Depends", "Depends")


def stanzas(text: str) -> list[str]:
    """The paragraphs of a dpkg status file, each as written."""
    return [p.strip("\n") + "\n" for p in re.split(r"\n\s*\n", text) if p.strip()]


def field(stanza: str, name: str) -> str:
    """A field's value, continuation lines joined; "" when absent."""
    m = re.search(rf"^{re.escape(name)}:(.*(?:\n[ \t].*)*)", stanza, re.MULTILINE)
    return " ".join(m.group(1).split()) if m else ""


def names(relation: str) -> list[str]:
    """Every package a relation field names, alternatives included, without versions
    or architecture qualifiers."""
    out = []
    for alt in re.split(r"[,|]", relation):
        name = alt.strip().split(" ")[0].split("(")[0].split(":")[0]
        if name:
            out.append(name)
    return out


def closure(paragraphs: Iterable[str], roots: Iterable[str]) -> set[str]:
    """The installed packages reached from roots through Pre-Depends and Depends,
    virtual packages resolved through Provides."""
    by_name: dict[str, list[str]] = {}
    providers: dict[str, set[str]] = {}
    for p in paragraphs:
        if not field(p, "Status").endswith(" installed"):
            continue
        name = field(p, "Package")
        by_name.setdefault(name, []).append(p)
        for virtual in names(field(p, "Provides")):
            providers.setdefault(virtual, set()).add(name)
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        for real in ({name} if name in by_name else set()) | providers.get(name, set()):
            if real in seen:
                continue
            seen.add(real)
            for p in by_name[real]:
                for f in _FOLLOWED:
                    todo.extend(names(field(p, f)))
    return seen


def trim(deb_control: str, db: Path = DPKG) -> int:
    """Cut db's status and file triggers down to what the package whose control
    paragraph is deb_control depends on; the number of packages kept."""
    status = db / "status"
    paragraphs = stanzas(status.read_text())
    roots = [n for f in _FOLLOWED for n in names(field(deb_control, f))]
    keep = closure(paragraphs, roots)
    status.write_text("\n".join(p for p in paragraphs if field(p, "Package") in keep))
    triggers = db / "triggers" / "File"
    if triggers.exists():
        lines = triggers.read_text().splitlines()
        # "PATH PACKAGE[:ARCH][/noawait]": a trigger of a package dpkg no longer knows.
        triggers.write_text("".join(
            line + "\n" for line in lines
            if line.split()[-1].split("/")[0].split(":")[0] in keep))
    return len(keep)
