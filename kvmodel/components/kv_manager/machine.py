"""The KV manager's Hypothesis machine: Use (well-formed and arbitrary), Deref, Destroy, Promote,
probes and malformed input.

Each rule draws one packed integer (:mod:`kvmodel.packed`) and reads its fields against the
current state: a block code below ``U`` (the full-hash universe, capacity + 2) is that hash, a
code in ``U..2U`` picks a block the manager knows (active or inactive), a code from ``2U`` on
names a partial block ``p0..p{P-1}`` (``P`` = capacity). One choice per step instead of the
five to twelve the same rules made with ``st.data()`` draws and a bundle of partial names:
about 2.5× the steps/s (``docs/performance.md``)."""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import rule

from kvmodel.components.kv_manager.actions import CurrentCapacity, GetPrefillCost, ProbeNewBlocks
from kvmodel.components.kv_manager.system import KvManagerSystem
from kvmodel.machines import Machine, WrongError
from kvmodel.model import errors as E
from kvmodel.model.blocks import Deref, Destroy, FullBlock, MoveBlock, PartialBlock, Promote, UniqueBlock, Use
from kvmodel.packed import Layout
from kvmodel.systems import Outcome

DOCUMENTED: dict[type, tuple[type[E.ModelError], ...]] = {
    Use: (E.ParentBlockPartial, E.PartialNotLast),
    Destroy: (E.DestroyNotActive, E.DestroyNotResident),
    Deref: (E.DerefNotHeld,),
    Promote: (E.PromoteMissing, E.PromoteNotResident, E.PromoteParentUnknown),
}

MALFORMED: list[Any] = [
    {"Use": [{"F": -1}]},
    {"Use": [{"F": 1 << 64}]},
    {"Use": "not a list"},
    {"Deref": [{"X": 1}]},
    {"Promote": {"uuid": 7, "hash": 1}},
    {"Promote": {"uuid": "p1"}},
    {"Frobnicate": []},
    [],
]


class _Layouts:
    """The rules' packed layouts for one capacity (shape fields first, see kvmodel.packed)."""

    def __init__(self, capacity: int) -> None:
        u = self.universe = capacity + 2
        p = self.partials = 2
        self.use = Layout(("n", capacity + 2), ("tail", p + 1), ("blocks", 2 * u, capacity + 1))
        self.use_any = Layout(("n", 5), ("blocks", 2 * u + p, 4))
        self.deref = Layout(("held", 2), ("n", 3), ("blocks", 2 * u + p, 3))
        self.destroy = Layout(("held", 2), ("n", 2), ("blocks", 2 * u + p, 2))
        self.promote = Layout(("uuid", 2 * p), ("hash", 2 * u), ("parent", 2 * u + 1))
        self.probe = Layout(("n", 4), ("blocks", u, 3))


_BY_CAPACITY: dict[int, _Layouts] = {}


def layouts(capacity: int) -> _Layouts:
    if capacity not in _BY_CAPACITY:
        _BY_CAPACITY[capacity] = _Layouts(capacity)
    return _BY_CAPACITY[capacity]


def _rule(name: str, body: Any, strategy: st.SearchStrategy[Any]) -> Any:
    """A rule named ``name`` running ``body(self, code)`` with ``code`` from ``strategy``
    (a fresh function: Hypothesis marks the function it decorates, once)."""

    def step(self: Any, code: Any) -> None:
        body(self, code)

    step.__name__ = step.__qualname__ = name
    step.__doc__ = body.__doc__
    return rule(code=strategy)(step)


class KvManagerMachine(Machine):
    """Rules: Use (well-formed and arbitrary), Deref, Destroy, Promote, probes, malformed input."""

    component = "kv_manager"
    config: ClassVar[dict[str, Any]] = dict(KvManagerSystem.DEFAULTS)
    quirks = frozenset()

    layouts: ClassVar[_Layouts]
    PACKED = ("use", "use_any", "deref", "destroy", "promote", "probe")

    @classmethod
    def bind(cls, config: dict[str, Any]) -> dict[str, Any]:
        """The packed rules for this capacity: each rule's strategy is its layout's."""
        lay = layouts(int(config["max_capacity"]))
        out: dict[str, Any] = {"layouts": lay}
        for name in cls.PACKED:
            out[name] = _rule(name, getattr(cls, "_" + name), getattr(lay, name).strategy)
        return out

    # -- reading block codes against the current state

    def _known(self, full_only: bool = False) -> list[UniqueBlock]:
        m = self.system.model
        ks = set(m.active) | set(m.inactive.keys())
        return sorted((b for b in ks if not full_only or isinstance(b, FullBlock)), key=lambda b: b.sort_key())

    def _full(self, code: int, known: list[UniqueBlock]) -> UniqueBlock:
        """Below ``U`` that hash; from ``U`` on a known block (that hash again if none is known)."""
        u = self.layouts.universe
        if code < u or not known:
            return FullBlock(code % u)
        return known[(code - u) % len(known)]

    def _any(self, code: int, known: list[UniqueBlock]) -> UniqueBlock:
        p = self.layouts.partials
        if code < p:
            return PartialBlock(f"p{code}")
        return self._full(code - p, known)

    def _release(self, f: dict[str, Any], lo: int) -> tuple[UniqueBlock, ...]:
        """Either only blocks currently held (active), or anything: chosen per list, so that
        well-formed releases are common while bad ones are still generated."""
        codes = f["blocks"][: lo + f["n"]]
        held = sorted(self.system.model.active, key=lambda b: b.sort_key())
        if held and f["held"] == 0:
            picked: list[UniqueBlock] = []
            for c in codes:
                b = held[c % len(held)]
                if b not in picked:
                    picked.append(b)
            return tuple(picked)
        known = self._known()
        return tuple(self._any(c, known) for c in codes)

    def _expect(self, sig: MoveBlock, out: Outcome, pre_active: dict[UniqueBlock, int]) -> None:
        err = out.error
        if err is not None and not isinstance(err, DOCUMENTED[type(sig)]):
            raise WrongError(f"{sig.to_json()} raised undocumented {type(err).__name__}: {err}")
        if isinstance(sig, Destroy) and any(b not in pre_active for b in sig.blocks):
            if not isinstance(err, E.DestroyNotActive):
                raise WrongError(f"Destroy of a non-active block did not raise: {sig.to_json()}")
        if isinstance(sig, Promote) and PartialBlock(sig.uuid) not in pre_active:
            if not isinstance(err, E.PromoteMissing):
                raise WrongError(f"Promote of a non-active partial did not raise: {sig.to_json()}")

    def _process(self, sig: MoveBlock) -> None:
        pre_active = dict(self.system.model.active)
        out = self._run("process", sig)
        self._expect(sig, out, pre_active)

    # -- rules

    def _use(self, code: Any) -> None:
        """A well-formed Use: full blocks, then at most one partial at the end."""
        f = self.layouts.use.read(code)
        known = self._known(full_only=True)
        blocks = [self._full(c, known) for c in f["blocks"][: f["n"]]]
        if f["tail"]:
            blocks.append(PartialBlock(f"p{f['tail'] - 1}"))
        self._process(Use(tuple(blocks)))

    def _use_any(self, code: Any) -> None:
        """Any mix, partials anywhere (bad input for the ideal model)."""
        f = self.layouts.use_any.read(code)
        known = self._known()
        self._process(Use(tuple(self._any(c, known) for c in f["blocks"][: f["n"]])))

    def _deref(self, code: Any) -> None:
        self._process(Deref(self._release(self.layouts.deref.read(code), 1)))

    def _destroy(self, code: Any) -> None:
        self._process(Destroy(self._release(self.layouts.destroy.read(code), 1)))

    def _promote(self, code: Any) -> None:
        """Promote a live partial (or any name) to a full hash, with or without a parent."""
        f = self.layouts.promote.read(code)
        p = self.layouts.partials
        live = sorted(b.uuid for b in self.system.model.active if isinstance(b, PartialBlock))
        uuid = live[f["uuid"] % len(live)] if f["uuid"] < p and live else f"p{f['uuid'] % p}"
        known = self._known(full_only=True)
        h = self._full(f["hash"], known)
        parent = None if f["parent"] == 0 else self._full(f["parent"] - 1, known)
        assert isinstance(h, FullBlock) and (parent is None or isinstance(parent, FullBlock))
        self._process(Promote(uuid, h.hash, None if parent is None else parent.hash))

    def _probe(self, code: Any) -> None:
        f = self.layouts.probe.read(code)
        blocks = tuple(FullBlock(c) for c in f["blocks"][: f["n"]])
        out = self._run("probe_new_blocks", ProbeNewBlocks(blocks))
        m = self.system.model
        assert out.result == sum(1 for b in blocks if b not in m.all_blocks)
        # the prefill cost of the same blocks as a prompt of full blocks (its invariant checks it)
        self._run("get_prefill_cost", GetPrefillCost(blocks, 16 * len(blocks)))
        self._run("current_capacity", CurrentCapacity())

    @rule(args=st.sampled_from(MALFORMED))
    def malformed(self, args: Any) -> None:
        before = self.system.key()
        out = self._run_json("process", args)
        if not isinstance(out.error, E.InvalidInput):
            raise WrongError(f"malformed {args!r} gave {out.error!r}, not InvalidInput")
        if self.system.key() != before:
            raise WrongError(f"malformed {args!r} changed the state")


for _name, _value in KvManagerMachine.bind(KvManagerMachine.config).items():
    setattr(KvManagerMachine, _name, _value)
