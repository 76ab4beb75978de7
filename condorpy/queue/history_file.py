"""Job ads from a history file in HTCondor's format, for ``history -file FILE``: each
ad in the old ClassAd syntax, ended by a banner line that starts with ``*** ``
(``*** Offset = 0 ClusterId = 2 ProcId = 0 Owner = "alice" CompletionDate = ...``).
The ads come oldest first, as the file holds them. Pure: text in, ads out.
"""

from __future__ import annotations

from condorpy.classad import ClassAd


def history_ads(text: str, *, source: str) -> list[ClassAd]:
    """The ads of a history file's ``text``; an ad that has no banner after it yet
    (a file being written) counts too, and an empty stretch between banners is none."""
    ads: list[ClassAd] = []
    chunk: list[str] = []

    def flush(line_no: int) -> None:
        if any(line.strip() for line in chunk):
            ads.append(ClassAd.parse_old("\n".join(chunk),
                                         source=f"{source}, the ad before line {line_no}"))
        chunk.clear()

    lines = text.splitlines()
    for n, line in enumerate(lines, start=1):
        if line.startswith("*** "):
            flush(n)
        else:
            chunk.append(line)
    flush(len(lines) + 1)
    return ads
