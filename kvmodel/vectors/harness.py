"""The generic vector driver: one loop for every component, harness operations included.

A component's :class:`Harness` constructs the model from the vector's ``constructor``, applies
its operations (methods ``op_<name>``; an unknown one is "cannot interpret"), and reports what
is observable after a step (:meth:`Harness.observe`: the real structs' fields and accessors,
under their Rust names) and the events the step emitted, in the vectors' notation. The driver
adds what every component shares:

* harness operations: ``observe`` / ``inspect`` / ``observe_channel`` / ``compare`` (nothing is
  done, the expectations are checked), ``clear_captured_events`` (empty the capturing sink),
  ``inspect_events`` (the sink's events since the last clear become ``events``), ``record``
  (bind names to observations for later steps), ``repeat`` (a loop body in the notation's small
  statement language, see :mod:`kvmodel.vectors.script`);
* observations: ``returns``, ``events`` (this step's), ``captured_events`` (since the last clear),
  ``stored_count`` / ``removed_count`` / ``removed_hashes_total`` over the captured events, every
  ``record``-ed name, and every named object's view (sequences ``S.h[i]``, reservations);
* ``_unchanged`` forms against the observation before the step.

A Rust panic is a :class:`~kvmodel.model.errors.ModelError`; a step that raises one must say
``expect: {"panic": ...}`` and vice versa.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from kvmodel.model.errors import ModelError
from kvmodel.model.g1.acquire import plain
from kvmodel.vectors.notation import Matcher, Mismatch, Namespace, Uninterpretable, check_step, j

HARNESS_OPS = ("observe", "inspect", "observe_channel", "compare", "clear_captured_events", "inspect_events", "record")


class Harness:
    """One component's side of the notation. Subclasses define ``op_*`` methods, ``observe``
    and ``drain``; ``quirks`` is the revision's quirk set the model is built with."""

    component: ClassVar[str] = ""
    # other names the step's events go by ("messages" for the registry's mock channel)
    event_aliases: ClassVar[tuple[str, ...]] = ()
    # source_version pattern -> revision of the model component, first match wins
    revisions: ClassVar[tuple[tuple[str, str], ...]] = ()
    model_component: ClassVar[str] = ""

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        self.vector = vector
        self.quirks = quirks
        self.constructor: dict[str, Any] = dict(vector.get("constructor") or {})
        self.named: dict[str, Any] = {}  # objects the steps name (sequences, reservations, ...)

    # -- what a component defines
    def block_size(self) -> int | None:
        return None

    def observe(self) -> dict[str, Any]:
        return {}

    def drain(self) -> list[Any]:
        return []

    def calls(self) -> dict[str, Callable[..., Any]]:
        """Accessors with arguments the notation may call (``name(arg)``)."""
        return {}

    def key_of(self, v: Any) -> str | None:
        """The key string an observed map uses for a structured key (a PLH), if any."""
        return None

    def named_views(self) -> dict[str, Any]:
        return {}

    def run_script(self, args: dict[str, Any]) -> dict[str, Any]:
        raise Uninterpretable("this component has no loop bodies (repeat)")

    # -- dispatch
    def call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        fn = getattr(self, "op_" + op.replace("::", "_").replace("-", "_"), None)
        if fn is None:
            known = sorted(n[3:] for n in dir(self) if n.startswith("op_"))
            raise Uninterpretable(f"unknown {self.component} operation {op!r} (known: {', '.join(known)})")
        out = fn(args)
        return out if isinstance(out, dict) else {"returns": out}


def _event_counts(events: list[Any]) -> dict[str, Any]:
    """Counts over the captured events (the capturing sink since the last clear)."""
    stored = [e for e in events if isinstance(e, dict) and ("Stored" in e or "Store" in e)]
    removed = [e for e in events if isinstance(e, dict) and ("Removed" in e or "Remove" in e)]
    hashes: list[Any] = []
    stored_hashes: list[Any] = []
    for e in removed:
        body = e.get("Removed") or e.get("Remove") or {}
        hashes += list(body.get("block_hashes") or body.get("blocks") or [])
    for e in stored:
        body = e.get("Stored") or e.get("Store") or {}
        stored_hashes += [b.get("block_hash") if isinstance(b, dict) else b for b in body.get("blocks") or []]
    return {
        "stored_count": len(stored),
        "removed_count": len(removed),
        "removed_hashes_total": len(hashes),
        "removed_hashes": hashes,
        "removed_hash": hashes,
        "stored_hashes": stored_hashes,
    }


def run(harness: Harness, vector: dict[str, Any]) -> None:
    """Run every step of ``vector`` on ``harness``; raise :class:`Mismatch` at the first
    difference, :class:`Uninterpretable` at the first thing the notation does not define."""
    matcher = Matcher()
    captured: list[Any] = []
    recorded: dict[str, Any] = {}
    steps = vector.get("steps")
    if not isinstance(steps, list):
        raise Uninterpretable("steps must be a list")
    last: dict[str, Any] = {}
    last_events: list[Any] = []
    history: dict[str, dict[str, Any]] = {}
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise Uninterpretable(f"step {i} is not an object: {j(step)}")
        op = step.get("op")
        args = step.get("args")
        args = {} if args is None else args
        if not isinstance(op, str) or not isinstance(args, dict):
            raise Uninterpretable(f"step {i}: op must be a string and args an object, got {j(op)} / {j(args)}")
        try:
            before = {**harness.observe(), **harness.named_views()}
            vals: dict[str, Any] = {}
            err: ModelError | None = None
            events_override: list[Any] | None = None
            try:
                if op == "clear_captured_events":
                    captured.clear()
                elif op == "inspect_events":
                    events_override = list(captured)
                elif op == "repeat":
                    vals = harness.run_script(args)
                elif op in HARNESS_OPS:
                    pass
                else:
                    vals = plain(harness.call(op, args))
            except ModelError as e:
                err = e
            events = harness.drain()
            captured.extend(events)
            obs = {**harness.observe(), **harness.named_views()}
            values: dict[str, Any] = {**obs, **recorded, **_event_counts(captured)}
            values["events"] = events if events_override is None else events_override
            values["events_full"] = values["events"]
            for alias in harness.event_aliases:
                values[alias] = values["events"]
            values["captured_events"] = list(captured)
            for k, ev in enumerate(values["events"]):
                values[f"events[{k}]"] = ev
            values["after_last_step"] = obs
            values["previous"] = last
            values.update(vals)
            ns = Namespace(
                values,
                harness.block_size(),
                before=before,
                calls=harness.calls(),
                key_of=harness.key_of,
                history=history,
            )
            if op == "record":
                for name, path in args.items():
                    if not isinstance(path, str):
                        raise Uninterpretable(f"record {name!r}: the observation must be named by a string")
                    recorded[name] = ns.resolve(path)
                    values[name] = recorded[name]
            check_step(step, ns, matcher, err)
            last, last_events = obs, values["events"]
            history[op] = values
        except Mismatch as e:
            raise Mismatch(f"step {i} ({op}): {e}") from None
        except Uninterpretable as e:
            raise Uninterpretable(f"step {i} ({op}): {e}") from None
    final = vector.get("derived_not_asserted") or {}
    if not isinstance(final, dict):
        raise Uninterpretable("the vector's derived_not_asserted must be an object")
    if final:
        obs = {**harness.observe(), **harness.named_views()}
        values = {
            **obs,
            **recorded,
            **_event_counts(captured),
            "captured_events": list(captured),
            "events": last_events,
            "after_last_step": obs,
        }
        ns = Namespace(values, harness.block_size(), calls=harness.calls(), key_of=harness.key_of, history=history)
        for key, val in final.items():
            key2 = key[: -len("_at_end")] if key.endswith("_at_end") else key
            try:
                ns.check(key2, val, matcher, strict_text=False)
            except Mismatch as e:
                raise Mismatch(f"after the last step: {e}") from None
            except Uninterpretable as e:
                raise Uninterpretable(f"after the last step: {e}") from None
