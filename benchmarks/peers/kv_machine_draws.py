"""The KV manager's Hypothesis machine as it was before packed rule arguments (commit 9bf14ad,
``kvmodel/components/kv_manager/machine.py``): ``st.data()`` draws per block, a bundle of
partial names. Kept only as the peer of ``benchmarks/hypothesis_throughput.py``, which measures
the current machine's throughput, time to find each quirk and counterexample length against it
in the same run."""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    initialize,
    rule,
)

from kvmodel.components.kv_manager.actions import CurrentCapacity, ProbeNewBlocks
from kvmodel.components.kv_manager.system import KvManagerSystem
from kvmodel.machines import Machine, WrongError
from kvmodel.model import errors as E
from kvmodel.model.blocks import Deref, Destroy, FullBlock, MoveBlock, PartialBlock, Promote, UniqueBlock, Use
from kvmodel.systems import Outcome

DOCUMENTED: dict[type, tuple[type[E.ModelError], ...]] = {
    Use: (E.ParentBlockPartial, E.PartialNotLast),
    Destroy: (E.DestroyNotActive, E.DestroyNotResident),
    Deref: (E.DerefNotHeld,),
    Promote: (E.PromoteMissing, E.PromoteNotResident, E.PromoteParentUnknown),
}


class KvManagerMachine(Machine):
    """Rules: Use (well-formed and arbitrary), Deref, Destroy, Promote, probes, malformed input."""

    component = "kv_manager"
    config: ClassVar[dict[str, Any]] = dict(KvManagerSystem.DEFAULTS)
    quirks = frozenset()
    partials = Bundle("partials")

    def __init__(self) -> None:
        super().__init__()
        self._fresh = 0
        n = int(self.config["max_capacity"]) + 2
        self.universe = n

    # -- strategies built once per class (the universe depends on the configuration);
    # building them per draw made Hypothesis re-validate them every time.
    _cache: ClassVar[dict[str, Any]]

    @classmethod
    def _static(cls) -> dict[str, Any]:
        cache = cls.__dict__.get("_cache")
        if cache is None:
            fulls = st.integers(0, int(cls.config["max_capacity"]) + 1).map(FullBlock)
            partials: st.SearchStrategy[str] = cls.partials
            cache = {
                "fulls": fulls,
                "any": st.one_of(fulls, partials.map(PartialBlock)),
                "bool": st.booleans(),
                "idx": st.integers(0, 63),
                "len": st.integers(0, 15),
                "tail": st.none() | partials,
            }
            cls._cache = cache
        return cache

    @classmethod
    def fulls(cls) -> st.SearchStrategy[FullBlock]:
        s: st.SearchStrategy[FullBlock] = cls._static()["fulls"]
        return s

    @initialize(target=partials)
    def first_partial(self) -> str:
        return self.new_name()

    def new_name(self) -> str:
        self._fresh += 1
        return f"p{self._fresh}"

    @rule(target=partials)
    def new_partial(self) -> str:
        return self.new_name()

    # -- drawing from the current state. Strategies built from the state on every draw
    # (sampled_from(known)) cost Hypothesis a validation each time; instead a static
    # integer picks an index into the known blocks (small indices shrink to the first).

    def _pick(self, data: st.DataObject, items: list[Any], label: str) -> Any:
        return items[data.draw(self._static()["idx"], label=label) % len(items)]

    def _coin(self, data: st.DataObject, label: str) -> bool:
        b: bool = data.draw(self._static()["bool"], label=label)
        return b

    def _known(self, full_only: bool = False) -> list[UniqueBlock]:
        m = self.system.model
        ks = set(m.active) | set(m.inactive.keys())
        return sorted((b for b in ks if not full_only or isinstance(b, FullBlock)), key=lambda b: b.sort_key())

    def _draw_block(self, data: st.DataObject) -> UniqueBlock:
        """Half the time a block the manager knows (active or inactive), else any block."""
        known = self._known()
        if known and self._coin(data, "known"):
            b: UniqueBlock = self._pick(data, known, "block")
            return b
        anyb: UniqueBlock = data.draw(self._static()["any"], label="block")
        return anyb

    def _draw_full(self, data: st.DataObject) -> FullBlock:
        known = self._known(full_only=True)
        if known and self._coin(data, "known"):
            b: FullBlock = self._pick(data, known, "full")
            return b
        return data.draw(self.fulls(), label="full")

    def _draw_len(self, data: st.DataObject, lo: int, hi: int) -> int:
        n: int = data.draw(self._static()["len"], label="len")
        return lo + n % (hi - lo + 1)

    def _blocks(self, data: st.DataObject, min_size: int, max_size: int) -> tuple[UniqueBlock, ...]:
        """Either only blocks currently held (active), or anything: chosen per list, so that
        well-formed releases are common while bad ones are still generated."""
        held = sorted(self.system.model.active, key=lambda b: b.sort_key())
        n = self._draw_len(data, min_size, max_size)
        if held and self._coin(data, "held_only"):
            picked: list[UniqueBlock] = []
            for _ in range(n):
                b = self._pick(data, held, "held")
                if b not in picked:
                    picked.append(b)
            return tuple(picked)
        return tuple(self._draw_block(data) for _ in range(n))

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
        m = self.system.model
        pre_active = dict(m.active)
        out = self._run("process", sig)
        self._expect(sig, out, pre_active)

    @rule(data=st.data())
    def use(self, data: st.DataObject) -> None:
        """A well-formed Use: full blocks, then at most one partial at the end."""
        n = self._draw_len(data, 0, int(self.config["max_capacity"]) + 1)
        fulls = [self._draw_full(data) for _ in range(n)]
        tail = data.draw(self._static()["tail"], label="tail")
        blocks = tuple(fulls) + ((PartialBlock(tail),) if tail is not None else ())
        self._process(Use(blocks))

    @rule(data=st.data())
    def use_any(self, data: st.DataObject) -> None:
        """Any mix, partials anywhere (bad input for the ideal model)."""
        n = self._draw_len(data, 0, 4)
        self._process(Use(tuple(self._draw_block(data) for _ in range(n))))

    @rule(data=st.data())
    def deref(self, data: st.DataObject) -> None:
        self._process(Deref(self._blocks(data, 1, 3)))

    @rule(data=st.data())
    def destroy(self, data: st.DataObject) -> None:
        self._process(Destroy(self._blocks(data, 1, 2)))

    @rule(data=st.data())
    def promote(self, data: st.DataObject) -> None:
        m = self.system.model
        live = sorted(b.uuid for b in m.active if isinstance(b, PartialBlock))
        if live and self._coin(data, "live"):
            uuid: str = self._pick(data, live, "uuid")
        else:
            uuid = data.draw(self.partials, label="uuid")
        h = self._draw_full(data).hash
        parent = None if self._coin(data, "no_parent") else self._draw_full(data).hash
        self._process(Promote(uuid, h, parent))

    @rule(data=st.data())
    def probe(self, data: st.DataObject) -> None:
        blocks = [data.draw(self.fulls(), label="full") for _ in range(self._draw_len(data, 0, 3))]
        out = self._run("probe_new_blocks", ProbeNewBlocks(tuple(blocks)))
        m = self.system.model
        assert out.result == sum(1 for b in blocks if b not in m.all_blocks)
        self._run("current_capacity", CurrentCapacity())

    @rule(
        args=st.sampled_from(
            [
                {"Use": [{"F": -1}]},
                {"Use": [{"F": 1 << 64}]},
                {"Use": "not a list"},
                {"Deref": [{"X": 1}]},
                {"Promote": {"uuid": 7, "hash": 1}},
                {"Promote": {"uuid": "p1"}},
                {"Frobnicate": []},
                [],
            ]
        )
    )
    def malformed(self, args: Any) -> None:
        before = self.system.key()
        out = self._run_json("process", args)
        if not isinstance(out.error, E.InvalidInput):
            raise WrongError(f"malformed {args!r} gave {out.error!r}, not InvalidInput")
        if self.system.key() != before:
            raise WrongError(f"malformed {args!r} changed the state")
