"""The G1 KVBM backend's bounded world for the explorer: request-level moves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.explorer import NoSymmetry, owner_canonical
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.systems import System

# (tokens, prefix caching): two full blocks; a block whose PLH collides with the first one's
# when fragments are reduced modulo 2 (a different sequence hash, the same PLH); a
# caching-disabled block (random hashes); a block with another PLH and a partial; the first
# prompt and a partial (three blocks: more than a capacity-2 world holds).
KVBM_PROMPTS: tuple[tuple[tuple[int, ...], bool], ...] = (
    ((1, 2, 3, 4), True),
    ((7, 8), True),
    ((9, 10), False),
    ((15, 16, 5), True),
    ((1, 2, 3, 4, 5), True),
)


@attrs.frozen
class KvbmSpace(NoSymmetry):
    """Bounded G1 world with the KVBM backend (capacity 3, block size 2, PLH fragments modulo
    2): ``owners`` requests started from one of ``prompts`` prompts, growing by ``pushes``
    tokens; at most one decode reservation of ``decode`` slots; destinations; a request's
    blocks named again (``resend``); and the malformed inputs (``bad_use``, ``bad_deref``)."""

    component = "g1_kvbm"
    owners: int = 2
    prompts: int = 3
    pushes: int = 1
    decode: int = 0
    bad: bool = True

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("owners", "prompts", "pushes", "decode"))
        if self.prompts > len(KVBM_PROMPTS):
            raise InvalidInput(f"at most {len(KVBM_PROMPTS)} prompts")

    def to_json(self) -> dict[str, int]:
        return {k: int(v) for k, v in attrs.asdict(self).items()}

    def symmetric(self) -> bool:
        """Whether requests are interchangeable in this world: not when it holds the
        caching-disabled prompt, whose sequence and PLH hashes are drawn from a generator seeded
        with the sequence's name (``model/g1/sequence.py``), so renaming a request changes them."""
        return all(c for _, c in KVBM_PROMPTS[: self.prompts])

    def key(self, s: System, symmetry: bool) -> Any:
        """With symmetry in a world where requests are interchangeable (:meth:`symmetric`): the
        least of the state's keys under every renaming of the requests, with the orbit's size
        (``explorer.owner_canonical``); else the system's key."""
        return owner_canonical(s, self.owners) if symmetry and self.symmetric() else (1, s.key())

    def orbit(self, key: Any) -> int:
        return int(key[0])

    def cannot_break(self) -> frozenset[str]:
        """Invariants no run of this world breaks, whatever its quirks (``kvmodel explore`` does
        not wait for them): without the third prompt, the caching-disabled one, no sequence is
        uncached, so ``kvbm.uncached_silent`` holds."""
        return (
            frozenset() if any(not c for _, c in KVBM_PROMPTS[: self.prompts]) else frozenset({"kvbm.uncached_silent"})
        )

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        from kvmodel.components.g1_kvbm.system import G1KvbmSystem

        return G1KvbmSystem({"max_capacity": 3, "plh_fragments": 2, **config}, list(quirks))

    def moves(self) -> list[Any]:
        os_, ps = range(self.owners), range(self.prompts)
        out: list[Any] = [("new_request", o, p) for o in os_ for p in ps]
        out += [(k, o) for k in ("allocate", "push", "resend", "free") for o in os_]
        if self.decode:
            out += [("reserve_decode",), ("release_decode",)]
            out += [("decode_push", o) for o in os_]
        out += [("reserve_destination", o, p) for o in os_ for p in ps]
        out += [(k, o) for k in ("activate_destination", "cancel_destination") for o in os_]
        if self.bad:
            out += [("bad_use", "dup_partial"), ("bad_use", "hash_two_plhs")]
            out += [("bad_deref", o) for o in os_]
        return out

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        kind = move[0]
        if kind in ("new_request", "reserve_destination"):
            toks, caching = KVBM_PROMPTS[move[2]]
            a: dict[str, Any] = {"owner": move[1], "tokens": list(toks), "caching": caching}
        elif kind in ("push", "decode_push"):
            a = {"owner": move[1], "token": 6}
        elif kind == "reserve_decode":
            a = {"count": self.decode}
        elif kind == "release_decode":
            a = {}
        elif kind == "bad_use":
            a = {"kind": move[1]}
        else:
            a = {"owner": move[1]}
        from kvmodel.components.g1_kvbm.actions import ACTIONS

        return kind, ACTIONS.by_op[kind](**a), a

    def allows(self, s: System, move: Any) -> bool:
        from kvmodel.components.g1_kvbm.system import G1KvbmSystem

        assert isinstance(s, G1KvbmSystem)
        kind = move[0]
        if kind == "bad_use":
            # once: a faithful commit-time panic leaves the entry installed, and naming it
            # again would only grow its reference count without bound
            m = s.model.kvbm
            return s.BAD_HASH not in m.active_full and "bad" not in m.active_partial
        o: int = move[1] if len(move) > 1 else -1
        seq = s.seqs.get(o)
        held = s.holdings.get(o) or []
        if kind in ("new_request", "reserve_destination"):
            return seq is None
        if kind == "allocate":
            return seq is not None and not held and o not in s.dest
        if kind in ("push", "decode_push"):
            if seq is None or not held or o in s.dest or o in s.stalled:
                return False
            if len(seq) >= seq.num_input_tokens + self.pushes:
                return False
            if kind == "decode_push":
                return bool(s.decodes) and ((len(seq) + 1) % seq.block_size != 1 or bool(s.decodes[0].slots))
            return True
        if kind == "resend":
            return bool(held) and len(held) == len(set(held)) and o not in s.dest
        if kind in ("free", "bad_deref"):
            return seq is not None and o not in s.dest
        if kind == "reserve_decode":
            return not s.decodes
        if kind == "release_decode":
            return bool(s.decodes)
        return o in s.dest  # activate / cancel
