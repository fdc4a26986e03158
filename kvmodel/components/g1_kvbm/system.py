"""The G1 manager with its KVBM backend on kvbm-logical (fa6894c9a), driven request by request."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from kvmodel.components.g1_kvbm.actions import ACTIONS
from kvmodel.components.g1_requests import G1RequestSystem, _ints, renamed_blocks, renaming
from kvmodel.invariants.core import counts_of
from kvmodel.invariants.kvbm import Before
from kvmodel.model.errors import InvalidInput
from kvmodel.model.g1.acquire import Ready


class G1KvbmSystem(G1RequestSystem):
    """The G1 facade with the KVBM backend (its default), driven request by request.

    Operations (trace format; one action class each, ``actions.py``): ``new_request {owner,
    tokens, caching}`` (a sequence; ``caching``
    false gives random hashes), ``allocate {owner}`` (its creation signal), ``push {owner,
    token}`` (the Promote of a completed tail and the Use of a new partial),
    ``decode_push {owner, token}`` (the same through the outstanding decode reservation),
    ``resend {owner}`` (the request's held blocks named again in one Use: a second logical
    holder of the same table), ``free {owner}`` (one Deref of what it holds, leaf first),
    ``reserve_decode {count}`` / ``release_decode {}``, ``reserve_destination {owner, tokens}`` /
    ``activate_destination {owner}`` / ``cancel_destination {owner}``, the malformed inputs
    ``bad_use {kind: dup_partial | hash_two_plhs | plh_alias | dup_full}`` and ``bad_deref {owner}`` (the request's
    Deref with an unknown block at the end), and ``counts {}``.

    The system keeps what each request holds (the blocks its successful signals named): a
    request's Deref names exactly those, so the manager's references can be checked against
    them.
    """

    ACTIONS = ACTIONS
    OPS = ACTIONS.ops
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "max_capacity": 3,
        "block_size": 2,
        "eviction_backend": "Lineage",
        "publishers": True,
        "dp_rank": 0,
        "plh_fragments": 0,
    }
    BAD_HASH = 999_999
    # the holder of a ``plh_alias`` or ``dup_full`` Use's block (no request: ``holdings`` keys it
    # apart)
    ALIAS_HOLDER = -1

    COMPONENT = "g1_kvbm"
    BACKEND = "kvbm"
    MANAGER_OPTIONS = ("eviction_backend", "publishers", "dp_rank")

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        super().__init__(config, quirks)
        self.holdings: dict[int, list[Any]] = {}
        # immutable values, replaced on a change, so that clones share them
        self.stalled: frozenset[int] = frozenset()
        self.uncached: frozenset[int] = frozenset()
        # the world's table of the requests' caching-disabled hashes, where renaming requests
        # renames them (``KvbmSpace.system`` sets it; ``None``: no hash is renamed)

    def _monitor(self) -> Any:
        from kvmodel.invariants.kvbm import KvbmMonitor

        return KvbmMonitor()

    def _copy_own(self, c: Any) -> None:
        c.holdings = {k: list(v) for k, v in self.holdings.items()}
        c.stalled = self.stalled
        c.uncached = self.uncached

    def _bookkeeping(self) -> tuple[Any, ...]:
        return ({k: list(v) for k, v in self.holdings.items()}, self.stalled)

    def _restore(self, saved: tuple[Any, ...]) -> None:
        self.holdings, self.stalled = saved

    def _new_seq(self, o: int, tokens: list[int], caching: bool) -> Any:
        if o in self.seqs:
            raise InvalidInput(f"request {o} exists")
        return self._sequence(o, tokens, caching, self._generation(o, caching))

    def _sequence(self, o: int, tokens: list[int], caching: bool, generation: int = 0) -> Any:
        from kvmodel.model.g1.sequence import ActiveSequence

        return ActiveSequence(
            tokens,
            8,
            self.model.block_size,
            caching,
            name=f"r{o}",
            plh_fragments=self.config["plh_fragments"],
            generation=generation,
        )

    def sequence_hashes(
        self, o: int, tokens: list[int], caching: bool, generation: int = 0
    ) -> tuple[list[int], list[Any]]:
        """The sequence hashes and PLHs of the full blocks of ``tokens`` as request ``o``'s
        sequence of that generation would have them (its random draws, with caching off: a
        sequence draws them block by block, so a shorter one has a prefix of them)."""
        s = self._sequence(o, tokens, caching, generation)
        return list(s.seq_hashes), list(s.plhs)

    def _use_of(self, s: Any, blocks: list[Any]) -> Any:
        """A Use naming ``blocks`` of sequence ``s`` (their PLHs and local hashes)."""
        from kvmodel.model.blocks import FullBlock
        from kvmodel.model.g1.sequence import G1Use

        idx = {b: i for i, b in enumerate(s.unique)}
        fulls = [idx[b] for b in blocks if isinstance(b, FullBlock)]
        return G1Use(
            tuple(blocks),
            tuple(s.local_hashes[i] for i in fulls) if s.caching else (),
            tuple(s.plhs[i] for i in fulls),
            None,
            None,
            s.caching,
        )

    def _reserve_decode(self, count: int) -> Any:
        """One reservation outstanding at a time."""
        if self.decodes:
            raise InvalidInput("a decode reservation is outstanding")
        return super()._reserve_decode(count)

    def _held_by(self, reservation: Any) -> list[Any]:
        """The reservation's layout: the blocks the request holds once it lands."""
        lay = reservation.layout
        return [] if lay is None else list(lay.blocks)

    def _activated(self, o: int, held: Any) -> None:
        self.holdings[o] = held

    def _push(self, o: int, token: int, decode: bool = False) -> list[str]:
        from kvmodel.model.blocks import FullBlock
        from kvmodel.model.g1.sequence import G1Promote, G1Use

        g = self.model
        s = self._seq(o)
        if o not in self.holdings or not self.holdings[o] or o in self.dest or o in self.stalled:
            raise InvalidInput(f"request {o} is not decoding")
        if decode:
            if not self.decodes:
                raise InvalidInput("no decode reservation outstanding")
            if (len(s) + 1) % s.block_size == 1 and not self.decodes[0].slots:
                raise InvalidInput("the decode reservation has no slot left")
        out: list[str] = []
        for sig in s.push(token) or []:
            if decode:
                r = g.process_decode_signal_for_request(o, sig, self.decodes[0])
            else:
                r = g.process_for_request(o, sig, 0)
            out.append(r)
            held = self.holdings[o]
            if isinstance(sig, G1Promote) and isinstance(r, Ready):
                # the partial became the full block of its hash, in every place the request holds
                # it (a resend holds it twice; its places are not the sequence's positions)
                full = FullBlock(sig.seq_hash)
                held[:] = [full if getattr(b, "uuid", None) == sig.uuid else b for b in held]
            elif isinstance(sig, G1Use):
                if isinstance(r, Ready):
                    held.extend(sig.blocks)
                else:
                    self.stalled = self.stalled | {o}
        s.commit_allocation(len(s))
        return out

    def _deref(self, o: int, bad: bool) -> Any:
        from kvmodel.model.blocks import FullBlock
        from kvmodel.model.g1.sequence import G1Deref

        self._seq(o)
        if o in self.dest:
            raise InvalidInput(f"request {o} is a destination reservation")
        blocks = tuple(reversed(self.holdings.get(o, [])))
        if bad:
            blocks += (FullBlock(self.BAD_HASH),)
        out = self.model.process_for_request(o, G1Deref(blocks), 0)
        self._forget(o)
        alias = self.holdings.get(self.ALIAS_HOLDER)
        if bad and alias:  # one of the malformed Use's references released
            del alias[0]
            if not alias:
                del self.holdings[self.ALIAS_HOLDER]
        return out

    def _forget(self, o: int) -> None:
        super()._forget(o)
        self.holdings.pop(o, None)
        self.stalled = self.stalled - {o}

    def _of_model(self) -> tuple[Any, Any, int]:
        """The manager's parts, its inactive index's key and size (immutable values: the clones
        of one state share them)."""
        from kvmodel.invariants.kvbm import _parts

        m = self.model.kvbm
        return _parts(m), m.sub.inactive.key(), len(m.sub.inactive)

    def _before(self, of_model: tuple[Any, Any, int]) -> Before:
        return Before(*of_model)

    def _observe(self) -> list[Any]:
        mine = set()
        for s in self.seqs.values():
            if not s.caching:
                mine.update(s.seq_hashes)
        uncached = self.uncached.union(mine)
        marks = self.model.kvbm.drain_use_marks()
        events: list[Any] = self.model.drain_events()
        self.monitor.observe(events, uncached, marks)
        # the hashes of caching-disabled sequences the requests or the manager still hold (one
        # neither holds never appears in an event again: each sequence draws fresh ones)
        if uncached != mine:
            held = set(_ints(self.model.key()))
            uncached = frozenset(h for h in uncached if h in mine or h in held)
        self.uncached = uncached
        return events

    def _after(self, pre: Before) -> None:
        pre.holdings = self.holdings
        pre.uncached = self.uncached
        # (most states hold no destination: an empty count without ``Counter.__init__``)
        pre.dest_pins = (
            Counter(plh for r in self.dest.values() if r.live for _, plh in r.pinned) if self.dest else counts_of(())
        )

    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.model.snapshot()
        snap["requests"] = {
            str(o): {"tokens": len(s), "holds": [repr(b) for b in self.holdings.get(o, [])]}
            for o, s in sorted(self.seqs.items())
        }
        return snap

    def key(self) -> Any:
        return self.key_under(None)

    def key_under(self, perm: tuple[int, ...] | None) -> Any:
        """The state's key, or (``perm``: request ``o`` becomes ``perm[o]``) the key of the state
        with its requests and the partial names their sequences minted renamed (the explorer's
        request symmetry, in a world whose prompts all cache: a caching-disabled sequence draws
        hashes and PLHs of its own, which no renaming of the requests maps onto another's)."""
        owner, uuid = renaming(perm)
        reqs = tuple(
            sorted(
                (
                    owner(o),
                    tuple(s.tokens),
                    s.caching,
                    s.num_allocated_tokens,
                    renamed_blocks(s.unique, uuid),
                    renamed_blocks(self.holdings.get(o, []), uuid),
                    o in self.stalled,
                )
                for o, s in self.seqs.items()
            )
        )
        res = self._reservations(owner)
        model = self.model.key() if not perm else self.model.arm.key(owner, uuid)
        return (model, self.monitor.key(), reqs, res, tuple(sorted(self.uncached)))

    def _reservations(self, owner: Callable[[int], int]) -> Any:
        dest = tuple(sorted((owner(o), tuple(r.pinned), tuple(r.unpublished), r.live) for o, r in self.dest.items()))
        return (tuple(tuple(r.slots) for r in self.decodes), dest)

    def _grows(self) -> frozenset[int]:
        """The hashes of caching-disabled blocks held (``_observe``): a step that changed them
        changed the state."""
        return self.uncached
