"""The G1 native backend's bounded world for the explorer: request-level moves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.explorer import NoSymmetry, owner_canonical
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.systems import System

G1_PROMPTS: tuple[tuple[int, ...], ...] = ((1, 2, 5), (7,), (1, 2, 3, 4))


@attrs.frozen
class G1Space(NoSymmetry):
    """Bounded G1 world (native backend): ``owners`` requests, each started from one of the
    prompts (block size 2: a full block and a partial; a lone partial; the same first block and one more),
    growing by ``pushes`` tokens at most; at most one decode reservation of ``decode`` slots.
    Moves: start a request, allocate it (with or without prefix reuse), push a token, finalize
    what it has, free it (leaf first) or Deref it in table order, reserve / release decode
    slots, reserve a destination for a prompt and activate or cancel it."""

    component = "g1_native"
    owners: int = 2
    prompts: int = 3
    pushes: int = 2
    decode: int = 1

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("owners", "prompts", "pushes", "decode"))
        if self.prompts > len(G1_PROMPTS):
            raise InvalidInput(f"at most {len(G1_PROMPTS)} prompts")

    def to_json(self) -> dict[str, int]:
        return {k: int(v) for k, v in attrs.asdict(self).items()}

    def key(self, s: System, symmetry: bool) -> Any:
        """With symmetry, requests are interchangeable (every move ranges over all of them
        alike): the canonical form is the least of the state's keys under every renaming of the
        requests, with the number of distinct ones (its orbit's size)."""
        return owner_canonical(s, self.owners) if symmetry else s.key()

    def orbit(self, key: Any) -> int:
        return int(key[0])

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        from kvmodel.components.g1_native.system import G1System

        return G1System({"max_capacity": 3, **config}, list(quirks))

    def moves(self) -> list[Any]:
        os_, ps = range(self.owners), range(self.prompts)
        out: list[Any] = [("new_request", o, p) for o in os_ for p in ps]
        out += [("allocate", o, r) for o in os_ for r in (False, True)]
        out += [(k, o) for k in ("push", "finalize", "free", "deref_in_order") for o in os_]
        if self.decode:
            out += [("reserve_decode",), ("release_decode",)]
        out += [("reserve_destination", o, p) for o in os_ for p in ps]
        out += [(k, o) for k in ("activate_destination", "cancel_destination") for o in os_]
        return out

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        kind = move[0]
        if kind in ("new_request", "reserve_destination"):
            a: dict[str, Any] = {"owner": move[1], "tokens": list(G1_PROMPTS[move[2]])}
        elif kind == "allocate":
            a = {"owner": move[1], "reuse": move[2]}
        elif kind == "push":
            a = {"owner": move[1], "token": 6}
        elif kind == "reserve_decode":
            a = {"count": self.decode}
        elif kind == "release_decode":
            a = {}
        else:
            a = {"owner": move[1]}
        from kvmodel.components.g1_native.actions import ACTIONS

        return kind, ACTIONS.by_op[kind](**a), a

    def allows(self, s: System, move: Any) -> bool:
        from kvmodel.components.g1_native.system import G1System

        assert isinstance(s, G1System)
        kind = move[0]
        seq = s.seqs.get(move[1]) if len(move) > 1 else None
        if kind in ("new_request", "reserve_destination"):
            return seq is None
        if kind == "allocate":
            return seq is not None and seq.num_allocated_tokens == 0 and move[1] not in s.dest
        if kind == "push":
            # Decode follows allocation; a push that starts a new block (and so promotes the
            # completed tail) happens only once everything before it was computed and finalized
            # (the scheduler generates a token after the forward pass over its predecessors).
            return (
                seq is not None
                and move[1] in s.model.native.tables
                and ((len(seq) + 1) % seq.block_size != 1 or s.computed.get(move[1]) == len(seq))
                and len(seq) < seq.num_input_tokens + self.pushes
                and move[1] not in s.dest
            )
        if kind == "finalize":
            return seq is not None and move[1] not in s.dest
        if kind in ("free", "deref_in_order"):
            return seq is not None and move[1] in s.model.native.tables and move[1] not in s.dest
        if kind == "reserve_decode":
            return not s.decodes
        if kind == "release_decode":
            return bool(s.decodes)
        return move[1] in s.dest  # activate / cancel
