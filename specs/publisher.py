"""The worker-side KV event publisher as a symbolic transition system (``kv_event_publisher``).

Real code: ``lib/llm/src/kv_router/publisher/dedup.rs`` (6f64a59b6). A second description of
what :class:`kvmodel.model.publisher.KvEventPublisher` executes, over ``ranks`` dp ranks and
``hashes`` block hashes, one block per event:

* ``C_r_h`` — the engine's copies of hash ``h`` on rank ``r`` (the monitor's ghost), at most
  ``copies``;
* ``N_r_h`` — the filter's count;
* ``V_r_h`` — whether the router (fed what the publisher sent) holds the hash.

``stored(r, h)`` adds a copy and a count and the router gains the hash; ``removed(r, h)`` takes a
copy (none left stays none), and the Removed passes when the count is at most one (the count
then goes), else the count drops by one; ``cleared(r)`` empties the rank. The quirks:
``removed_passes_every_copy`` (no filter: nothing counted, every Removed passes) and
``cleared_resets_every_rank``. Event ids are not state here: the id invariant is a step
property of the executable model. The ideal publisher is proved by 1-induction with the lemma
``publisher.counts_match_copies``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import z3

from kvmodel.components.publisher.actions import ACTIONS, TOKENS
from kvmodel.invariants.publisher import NAME
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.model.quirks import validate
from kvmodel.specs.engine import Effect, Property, State, Step, TransitionSystem


@attrs.frozen
class PublisherUniverse:
    ranks: int = 2
    hashes: int = 2
    copies: int = 2

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("ranks", "hashes", "copies"))
        if min(self.ranks, self.hashes, self.copies) < 1:
            raise InvalidInput("ranks, hashes and copies must be at least 1")

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


class PublisherSpec:
    def __init__(self, universe: PublisherUniverse | None = None, quirks: Iterable[str] = ()) -> None:
        self.u = universe or PublisherUniverse()
        self.quirks = validate(NAME, quirks)
        self.cells = [(r, h) for r in range(self.u.ranks) for h in range(self.u.hashes)]
        self.ts = TransitionSystem(NAME, self._variables(), self._init, ACTIONS.operations(self), self._properties())

    def bounded(self, depth: int) -> PublisherSpec:
        return self

    def exec_config(self) -> dict[str, Any]:
        return {}

    def universe_json(self) -> dict[str, Any]:
        return self.u.to_json()

    def step_json(self, step: Step) -> tuple[str, Any]:
        p = step.params
        if step.op == "stored":
            return "stored", {"dp_rank": p["r"], "blocks": [{"block_hash": p["h"], "tokens_hash": TOKENS + p["h"]}]}
        if step.op == "removed":
            return "removed", {"dp_rank": p["r"], "block_hashes": [p["h"]]}
        return "cleared", {"dp_rank": p["r"]}

    # ------------------------------------------------------------------ the system
    def _variables(self) -> tuple[tuple[str, Any], ...]:
        out: list[tuple[str, Any]] = []
        for r, h in self.cells:
            out += [(f"C_{r}_{h}", "nat"), (f"N_{r}_{h}", "nat"), (f"V_{r}_{h}", "bool")]
        return tuple(out)

    def _init(self, s: State) -> Any:
        return z3.And(
            [z3.And(s[f"C_{r}_{h}"] == 0, s[f"N_{r}_{h}"] == 0, z3.Not(s[f"V_{r}_{h}"])) for r, h in self.cells]
        )

    def _in(self, p: State, with_hash: bool = True) -> Any:
        cs = [p["r"] >= 0, p["r"] < self.u.ranks]
        if with_hash:
            cs += [p["h"] >= 0, p["h"] < self.u.hashes]
        return z3.And(cs)

    def stored(self, s: State, p: State) -> Effect:
        at = {(r, h): z3.And(p["r"] == r, p["h"] == h) for r, h in self.cells}
        guard = z3.And(self._in(p), *[z3.Implies(at[c], s[f"C_{c[0]}_{c[1]}"] < self.u.copies) for c in self.cells])
        post: dict[str, Any] = {}
        for r, h in self.cells:
            post[f"C_{r}_{h}"] = z3.If(at[(r, h)], s[f"C_{r}_{h}"] + 1, s[f"C_{r}_{h}"])
            counted = at[(r, h)] if "removed_passes_every_copy" not in self.quirks else z3.BoolVal(False)
            post[f"N_{r}_{h}"] = z3.If(counted, s[f"N_{r}_{h}"] + 1, s[f"N_{r}_{h}"])
            post[f"V_{r}_{h}"] = z3.Or(at[(r, h)], s[f"V_{r}_{h}"])
        return guard, post

    def removed(self, s: State, p: State) -> Effect:
        every = "removed_passes_every_copy" in self.quirks
        post: dict[str, Any] = {}
        for r, h in self.cells:
            at = z3.And(p["r"] == r, p["h"] == h)
            c, n = s[f"C_{r}_{h}"], s[f"N_{r}_{h}"]
            passes = z3.BoolVal(True) if every else n <= 1
            post[f"C_{r}_{h}"] = z3.If(z3.And(at, c > 0), c - 1, c)
            post[f"N_{r}_{h}"] = n if every else z3.If(at, z3.If(n <= 1, 0, n - 1), n)
            post[f"V_{r}_{h}"] = z3.And(s[f"V_{r}_{h}"], z3.Not(z3.And(at, passes)))
        return self._in(p), post

    def cleared(self, s: State, p: State) -> Effect:
        every = "cleared_resets_every_rank" in self.quirks
        post: dict[str, Any] = {}
        for r, h in self.cells:
            here = p["r"] == r
            post[f"C_{r}_{h}"] = z3.If(here, 0, s[f"C_{r}_{h}"])
            post[f"N_{r}_{h}"] = 0 if every else z3.If(here, 0, s[f"N_{r}_{h}"])
            post[f"V_{r}_{h}"] = z3.And(s[f"V_{r}_{h}"], z3.Not(here))
        return self._in(p, with_hash=False), post

    def _properties(self) -> tuple[Property, ...]:
        return (
            Property(
                "publisher.router_view_matches_engine",
                lambda s: z3.And([s[f"V_{r}_{h}"] == (s[f"C_{r}_{h}"] > 0) for r, h in self.cells]),
            ),
            Property(
                "publisher.counts_match_copies",
                lambda s: z3.And([s[f"N_{r}_{h}"] == s[f"C_{r}_{h}"] for r, h in self.cells]),
                lemma=True,
            ),
        )


def make_spec(config: dict[str, Any] | None = None, quirks: Iterable[str] = ()) -> PublisherSpec:
    return PublisherSpec(PublisherUniverse(**dict(config or {})), quirks)
