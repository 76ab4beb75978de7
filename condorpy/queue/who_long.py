"""``condorpy who -long``: the ads of the slots that run a job, as condor_who -long
prints them (condor_who asks the startd for the slots with a JobId and prints each ad
whole, attributes sorted, followed by an empty line)."""

from __future__ import annotations

from typing import Sequence

from condorpy.classad import ClassAd
from condorpy.slots.status_format import render_long


def render_who_long(ads: Sequence[ClassAd]) -> str:
    return render_long([ad for ad in ads if isinstance(ad.evaluate("JobId"), str)])
