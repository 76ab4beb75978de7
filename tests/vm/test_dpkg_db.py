"""The systemd lane's cut-down dpkg database (tests/vm/dpkg_db.py), on a copy."""

from __future__ import annotations

from pathlib import Path

from tests.vm import dpkg_db

STATUS = """\
Package: python3-foo
Status: install ok installed
Architecture: all
Depends: python3:any (>= 3.11~), libbar1 (>= 2) | libbar-alt,
 python3-virtual
Description: foo
 a continuation line

Package: python3
Status: install ok installed
Architecture: amd64
Pre-Depends: python3-minimal (= 3.11.2-1+b1)

Package: python3-minimal
Status: install ok installed
Architecture: amd64

Package: libbar1
Status: install ok installed
Architecture: amd64
Multi-Arch: same

Package: libbar1
Status: install ok installed
Architecture: i386
Multi-Arch: same

Package: provider
Status: install ok installed
Architecture: all
Provides: python3-virtual (= 1)

Package: removed
Status: deinstall ok config-files
Architecture: all
Provides: libbar-alt

Package: man-db
Status: install ok installed
Architecture: amd64
Depends: libbar1
"""

CONTROL = """\
Package: condorpy
Architecture: all
Depends: python3-foo, python3:any (>= 3.11~)
Description: x
"""


def test_closure_follows_depends_alternatives_and_provides() -> None:
    keep = dpkg_db.closure(dpkg_db.stanzas(STATUS), ["python3-foo"])
    assert keep == {"python3-foo", "python3", "python3-minimal", "libbar1", "provider"}


def test_trim_keeps_whole_paragraphs_of_the_dependencies_and_their_triggers(
        tmp_path: Path) -> None:
    (tmp_path / "status").write_text(STATUS)
    (tmp_path / "triggers").mkdir()
    (tmp_path / "triggers" / "File").write_text(
        "/usr/share/man man-db\n/usr/lib/x libbar1:amd64/noawait\n/usr/y provider\n")
    assert dpkg_db.trim(CONTROL, tmp_path) == 5
    kept = dpkg_db.stanzas((tmp_path / "status").read_text())
    assert [dpkg_db.field(p, "Package") for p in kept] == [
        "python3-foo", "python3", "python3-minimal", "libbar1", "libbar1", "provider"]
    assert kept[0] == dpkg_db.stanzas(STATUS)[0]
    assert (tmp_path / "triggers" / "File").read_text() == \
        "/usr/lib/x libbar1:amd64/noawait\n/usr/y provider\n"
