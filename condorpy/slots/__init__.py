"""Slots: dividing the machine, carving d-slots, building slot ads (pure; see docs/slots.md).

- ``shares``    reading `SLOT_TYPE_<N>` values
- ``layout``    dividing the machine among slot types (`auto`, devices, LayoutError)
- ``configure`` the slot layer's knobs: slot types, carving policies, ad settings
- ``carving``   sizing a d-slot for a job (MODIFY_REQUEST_EXPR_*, Require<name>, consumption)
- ``load``      per-slot load averages and keyboard/console idle
- ``ads``       one slot's ClassAd
- ``manager``   :class:`SlotManager`, the object the policy engine and the daemon hold
"""
