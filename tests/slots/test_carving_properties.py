"""Carving never over-commits and always gives everything back (property-based)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from condorpy.classad import ClassAd
from condorpy.slots.model import Slot
from condorpy.slots.resources import Resources

from tests.slots.helpers import gpu_machine, manager

requests = st.fixed_dictionaries({
    "RequestCpus": st.integers(0, 30), "RequestMemory": st.integers(0, 50_000),
    "RequestDisk": st.integers(0, 6_000_000), "RequestGPUs": st.integers(0, 3)})
steps = st.lists(st.one_of(requests, st.integers(0, 10)), max_size=25)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_free_plus_held_is_always_the_whole_slot(plan: list[dict[str, int] | int]) -> None:
    m = manager(gpu_machine(), ("100%", 1, True))
    p = m.get("slot1")
    whole = p.resources
    for step in plan:
        children = m.dynamic_slots(p)
        if isinstance(step, int):
            if children:
                m.release(children[step % len(children)])
        else:
            m.carve(p, ClassAd(step))
        free = m.available(p)
        held = sum((d.resources for d in m.dynamic_slots(p)), Resources())
        total = free + held
        assert (total.cpus, total.memory_mb, total.disk_kb) == \
            (whole.cpus, whole.memory_mb, whole.disk_kb)
        assert total.custom["GPUs"] == whole.custom["GPUs"]
        assert sorted(total.devices["GPUs"]) == sorted(whole.devices["GPUs"])
        assert min(free.cpus, free.memory_mb, free.disk_kb, free.custom["GPUs"]) >= 0
    for d in m.dynamic_slots(p):
        assert isinstance(d, Slot)
        m.release(d)
    assert m.available(p) == whole
