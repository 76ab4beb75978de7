"""Broken slots: the ledger's accounting, the manager's lost resources, the attributes
and the ``status -broken`` layout."""

from __future__ import annotations

from condorpy.classad import ClassAd
from condorpy.slots.broken import BrokenCause, BrokenCode, BrokenItem, BrokenLedger
from condorpy.slots.model import Slot
from condorpy.slots.resources import Resources
from condorpy.slots.status_format import render_broken
from tests.slots.helpers import gpu_machine, manager


def job(**attrs: object) -> ClassAd:
    ad = ClassAd()
    for k, v in attrs.items():
        ad[k] = v
    return ad


def _item(slot: str = "slot1_1", cause: BrokenCause | None = None,
          res: Resources | None = None) -> BrokenItem:
    return BrokenItem(slot, "slot1", cause or BrokenCause.leftover_processes([41, 40]),
                      res or Resources(2, 1024, 4096, custom={"GPUs": 1}), since=100,
                      context={"JobId": "3.0", "RemoteUser": "alice@x"})


def test_leftover_processes_cause_carries_htcondors_code() -> None:
    c = BrokenCause.leftover_processes([41, 40])
    assert c.code is BrokenCode.HUNG_PROCESSES and int(c.code) == 6
    assert "40, 41" in c.reason
    assert int(BrokenCause.volume_not_removed("vg/lv").code) == 5
    assert int(BrokenCause.cleanup_failed("rmtree").code) == 4


def test_first_cause_is_kept_and_mend_needs_the_same_code() -> None:
    led = BrokenLedger()
    led.report_broken(_item())
    led.report_broken(_item(cause=BrokenCause.volume_not_removed("vg/lv")))
    assert led.get("slot1_1") is not None
    assert led.get("slot1_1").cause.code is BrokenCode.HUNG_PROCESSES   # type: ignore[union-attr]
    assert led.mend("slot1_1", BrokenCode.UNCLEAN_VOLUME) is None
    assert led.is_broken("slot1_1")
    mended = led.mend("slot1_1", BrokenCode.HUNG_PROCESSES)
    assert mended is not None and not led.is_broken("slot1_1")
    assert led.mend("slot1_1") is None


def test_pslot_shrinks_by_what_is_broken_and_recovers_when_mended() -> None:
    led = BrokenLedger()
    given = Resources(8, 8192, 100_000, custom={"GPUs": 4})
    assert led.pslot_attrs("slot1", given) == {}
    led.report_broken(_item("slot1_1"))
    led.report_broken(_item("slot1_2", res=Resources(1, 512, 1000)))
    assert led.lost("slot1") == Resources(3, 1536, 5096, custom={"GPUs": 1})
    assert led.pslot_attrs("slot1", given) == {
        "BrokenSlotCpus": 3, "TotalSlotCpus": 5, "BrokenSlotMemory": 1536,
        "TotalSlotMemory": 6656, "BrokenSlotDisk": 5096, "TotalSlotDisk": 94904,
        "BrokenSlotGPUs": 1, "TotalSlotGPUs": 3}
    led.mend("slot1_1")
    led.mend("slot1_2")
    assert led.pslot_attrs("slot1", given) == {}


def test_broken_slot_offers_nothing_and_matches_no_job() -> None:
    led = BrokenLedger()
    led.report_broken(_item())
    attrs = led.slot_attrs("slot1_1")
    assert attrs["SlotBrokenCode"] == 6 and attrs["Cpus"] == 0 and attrs["Memory"] == 0
    assert attrs["GPUs"] == 0
    assert attrs["Requirements"] == attrs["SlotBrokenReason"]
    assert led.slot_attrs("slot1_2") == {}


def test_daemon_attrs_list_reasons_and_context_ads() -> None:
    led = BrokenLedger()
    led.report_broken(_item())
    ad = ClassAd()
    for k, v in led.daemon_attrs().items():
        ad[k] = v
    assert ad.evaluate("BrokenReasons") == [led.slot_attrs("slot1_1")["SlotBrokenReason"]]
    ctx = ad.evaluate("BrokenContextAds")
    assert isinstance(ctx, list) and len(ctx) == 1
    assert isinstance(ctx[0], ClassAd)
    assert ctx[0].evaluate("JobId") == "3.0" and ctx[0].evaluate("Code") == 6
    assert ctx[0].evaluate("Id") == "slot1_1" and ctx[0].evaluate("Time") == 100
    assert BrokenLedger().daemon_attrs() == {}


def test_manager_keeps_a_broken_dslots_resources_until_given_back() -> None:
    m = manager(gpu_machine(), ("100%", 1, True))
    p = m.get("slot1")
    before = m.available(p)
    d = m.carve(p, job(RequestCpus=2, RequestMemory=100, RequestDisk=1, RequestGPUs=1))
    assert isinstance(d, Slot)
    m.drop_broken(d)
    assert m.dynamic_slots(p) == []
    assert m.available(p) == before - d.resources
    m.give_back("slot1", d.resources)
    assert m.available(p) == before


def test_status_broken_layout() -> None:
    led = BrokenLedger()
    led.report_broken(_item())
    good, bad = ClassAd(), ClassAd()
    good["Name"] = "slot1@h"
    bad["Name"] = "slot1_1@h"
    for k, v in led.slot_attrs("slot1_1").items():
        bad[k] = v
    out = render_broken([good, bad])
    assert out.splitlines() == [
        "Name      Code Reason",
        f"slot1_1@h    6 {led.slot_attrs('slot1_1')['SlotBrokenReason']}"]
    assert render_broken([good]) == ""
