"""The block registry's adapter contract (docs/contracts.md)."""

from __future__ import annotations

EVENTS = (
    "`{kind: Register|Remove, sequence_hash: u64, tier: Device|HostPinned|Disk|null, handle: int, "
    "batch: int}` — `tier` is `null` in the untiered revisions (1.0.2, 403dd259: the wire event has "
    "none); `batch` is the 0-based index, within the step, of the event-manager message the event "
    "belongs to (one message per `publish`, one per released registration); `handle` names the "
    "registration handle and is compared up to a one-to-one renaming kept over the whole workload "
    "(number them any way you like, consistently); every other field exactly"
)

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("registry",)


CONTRACT = (EVENTS, MODULES, ())
