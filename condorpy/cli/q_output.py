"""``condorpy q``'s output made as the daemon's answer comes (startd.client.stream):
each ad is selected and, for the layouts that print an ad at a time (-af, -format,
-long, -json), written as soon as its part of the answer arrives. condor_q's tables
(the default batches, -nobatch, -run, -hold) begin with their schedd line at once and
keep only each selected job's cells until the end, since their columns are as wide
as the widest of those jobs needs (condor_q holds its rows until the end for the same
reason), unless -stream-results asks for each row as it comes; their totals count
every job of the queue as it passes.
"""

from __future__ import annotations

from typing import TextIO

from condorpy.classad import Budget, CallContext, ClassAd
from condorpy.queue.formats import Offset, QueueLayout, QueueTable, ScheddLabel
from condorpy.queue.printf import render_format
from condorpy.queue.query import Query
from condorpy.slots.status_format import render_autoformat, render_long, sorted_ad

# the layouts whose text is an ad's own, written as the ads come
AD_AT_A_TIME = ("af", "format", "long", "json")


class QueuePrinter:
    """Takes the queue's ads a part at a time (:meth:`take`), writes what can be
    written at once to ``out``, and the rest at :meth:`finish`. ``me``: only the
    caller's jobs are selected (condor_q's default), and the totals say how many the
    caller has."""

    def __init__(self, query: Query, out: TextIO, *, schedd: ScheddLabel, now: float,
                 utc_offset: Offset, layout: QueueLayout, me: str | None,
                 width: int | None) -> None:
        self.query, self.out, self.me = query, out, me
        self.ctx = CallContext(budget=Budget.for_user())   # one for the whole query
        self.selected = 0
        self.table: QueueTable | None = None
        if query.output not in AD_AT_A_TIME:
            self.table = QueueTable(schedd=schedd, now=now, utc_offset=utc_offset,
                                    layout=layout, me=me, width=width,
                                    stream=query.stream_results)
            out.write(self.table.title())
            out.flush()

    def _selects(self, ad: ClassAd) -> bool:
        if self.query.limit is not None and self.selected >= self.query.limit:
            return False
        if self.me is not None and ad.evaluate("Owner") != self.me:
            return False
        if not self.query.matches(ad, self.ctx):
            return False
        self.selected += 1
        return True

    def take(self, ads: list[ClassAd]) -> None:
        """The next ads of the queue, in id order."""
        chosen = []
        for ad in ads:
            if self.table is not None:
                self.table.count(ad)
            if self._selects(ad):
                chosen.append(ad)
        if self.table is not None:
            text = "".join([self.table.add(ad) for ad in chosen])
        else:
            text = self._text(chosen) if chosen else ""
        if text:
            self.out.write(text)
            self.out.flush()

    def _text(self, ads: list[ClassAd]) -> str:
        output = self.query.output
        if output == "long":
            return render_long(ads)
        if output == "af":
            return render_autoformat(ads, self.query.attrs)
        if output == "format":
            return render_format(ads, self.query.formats)
        # -json: one list, ``\n,\n`` between ads, as render_json writes it whole
        first = self.selected == len(ads)
        body = "\n,\n".join(sorted_ad(ad).to_json() for ad in ads)
        return ("[\n" if first else "\n,\n") + body

    def finish(self) -> None:
        if self.table is not None:
            self.out.write(self.table.finish())
        elif self.query.output == "json":
            self.out.write("\n]\n" if self.selected else "[\n]\n")
        self.out.flush()
