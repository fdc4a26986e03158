"""The block registry's Hypothesis machine: values drawn from a Bundle (issue 22's candidate)
against the current machine (names drawn by index among the model's values), in one run.

Issue 22 asks for real Bundles for the registry machine's values, with ``consumes()`` where
Rust moves a value, and time-to-find and counterexample length no worse. The candidate, defined
here, keeps every rule of ``kvmodel.components.registry.machine.RegistryMachine`` and its
weights; the caller's values live in one bundle of ``Named(name, kind)`` records, drawn per kind
by a filter, consumed by ``drop`` and ``take_handle``. Measured per quirk, seeds 0–9 with the two
machines alternated seed by seed, up to 3,000 examples of ≤ 30 steps: seconds to the shrunk
counterexample, seconds to the first failure, examples run, and the counterexample's length;
and the ideal machine's steps/s (300 examples).

Writes ``benchmarks/results/registry_machine.json``. Usage: ``python benchmarks/registry_machine.py``.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, consumes, initialize, multiple, precondition, rule

from kvmodel import __version__, machines
from kvmodel.components.registry.machine import RegistryMachine
from kvmodel.machines import Machine, WrongError
from kvmodel.model.quirks import quirks_of
from kvmodel.systems import Outcome

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = "kvbm_block_registry"
SEEDS = range(10)


@attrs.frozen
class Named:
    """A value the caller holds in the machine's ``values`` bundle: its name and its kind
    (``state``, ``publisher``, ``publish_handle`` or ``arc``; a name never changes kind)."""

    name: str
    kind: str


def _of(kind: str) -> Callable[[Named], bool]:
    return lambda v: v.kind == kind


class BundleRegistryMachine(RegistryMachine):
    """The current machine's rules (``settle``, ``malformed`` and the helpers are inherited), with
    the rules that make or take a value redefined over a bundle.

    The caller's values live in one Hypothesis bundle, ``values``, as :class:`Named` records (a
    rule draws one of a kind by filtering it): a rule that makes values adds them, a rule that
    takes one draws it, and the two calls that move a value in Rust — ``drop`` and
    ``Publisher::take_handle`` (which drops the publish handle it disarms) — consume it. The
    registries are the configuration's, drawn by name."""

    values = Bundle("values")
    state_values = values.filter(_of("state"))
    publishers = values.filter(_of("publisher"))
    publish_handles = values.filter(_of("publish_handle"))

    @initialize(target=values)
    def first_publisher(self) -> Named:
        name = self._name()
        self._run_json("new_publisher", {"as": name})
        return Named(name, "publisher")

    def _pool(self, data: st.DataObject, pools: Iterable[str] | None = None) -> str:
        """A registry by name: one of ``pools``, by default any of the configuration's."""
        names = sorted(self.system.model.pools if pools is None else pools)
        p: str = data.draw(st.sampled_from(names), label="registry")
        return p

    def _made(self, out: Outcome, name: str, kind: str) -> Any:
        """The new value for the bundle, or nothing when the call was rejected."""
        return multiple() if out.error is not None else Named(name, kind)

    def _complete(self, h: int) -> str:
        name = self._name()
        self._run_json("state_from_reset_apply_token_block", {"as": name, "block": {"hash": h}})
        return name

    @rule(target=values, h=RegistryMachine.hashes)
    def complete_state(self, h: int) -> Named:
        return Named(self._complete(h), "state")

    @rule(target=values, data=st.data(), new=st.none() | RegistryMachine.hashes)
    def register(self, data: st.DataObject, new: int | None) -> Any:
        """register_block of a new Complete state of hash ``new``, or of a state the caller
        holds (mostly a Complete one; sometimes any, so Reset/Partial/Registered are rejected),
        in any registry — half the time one whose unregister channel still carries this hash's
        earlier drop (the interleaving the cleanup task races with). The new state and the
        publish handle, if one is made, join the bundle."""
        from kvmodel.model.registry import BlockAlreadyRegistered, InvalidState

        m = self.system.model
        made: list[Named] = []
        if new is not None:
            state = self._complete(new)
            made.append(Named(state, "state"))
        elif not self._has("state"):
            return multiple()
        else:
            fresh = any(getattr(v, "kind", "") == "Complete" for v in m.values.values())
            pick = self.state_values
            if fresh and self._flip(data, "fresh"):
                pick = pick.filter(lambda v: getattr(m.values[v.name], "kind", "") == "Complete")
            state = data.draw(pick, label="state").name
        h = getattr(getattr(m.values[state], "block", None), "sequence_hash", None)
        racing = [n for n, p in m.pools.items() if h in p.pending]
        pool = self._pool(data, racing if racing and self._flip(data, "racing") else None)
        ph = self._name()
        out = self._run_json("register_block", {"registry": pool, "state": state, "as": ph})
        self._expect(out, BlockAlreadyRegistered, InvalidState)
        listed = self._run_json("is_registered", {"registry": pool, "hash": h if h is not None else 0})
        if out.error is None and listed.result is not True:
            raise WrongError(f"{state} registered in {pool} but is_registered says {listed.result}")
        if out.error is None and out.result is not None:
            made.append(Named(ph, "publish_handle"))
        return multiple(*made)

    @precondition(lambda self: self._has("state"))
    @rule(state=consumes(state_values))
    def drop_state(self, state: Named) -> None:
        """Drop a block state (a registered one releases its handles; the pool's task is told)."""
        self._run_json("drop", {"value": state.name})

    @rule(data=st.data())
    def drain(self, data: st.DataObject) -> None:
        """One step of a pool's unregister task; a pool with pending drops is picked first."""
        busy = [n for n, p in self.system.model.pools.items() if p.pending]
        self._run_json("drain", {"registry": self._pool(data, busy or None)})

    @rule(value=consumes(values))
    def drop(self, value: Named) -> None:
        """Rust ``drop`` of any value the caller holds."""
        self._run_json("drop", {"value": value.name})

    @precondition(lambda self: self._has("publish_handle") and self._has("publisher"))
    @rule(target=values, publisher=publishers, handle=consumes(publish_handles), keep=st.booleans())
    def take_handle(self, publisher: Named, handle: Named, keep: bool) -> Any:
        """``Publisher::take_handle``: the publish handle is moved in; the returned Arc is kept
        (it joins the bundle) or dropped at once."""
        args = {"publisher": publisher.name, "publish_handle": handle.name}
        if not keep:
            self._run_json("take_handle", args)
            return multiple()
        args["as"] = self._name()
        return self._made(self._run_json("take_handle", args), args["as"], "arc")

    @precondition(lambda self: self._has("publisher"))
    @rule(publisher=publishers)
    def publish(self, publisher: Named) -> None:
        self._run_json("publish", {"publisher": publisher.name})

    @precondition(lambda self: self._has("publish_handle"))
    @rule(target=values, handle=publish_handles)
    def remove_handle(self, handle: Named) -> Any:
        name = self._name()
        return self._made(self._run_json("remove_handle", {"publish_handle": handle.name, "as": name}), name, "arc")

    @precondition(lambda self: self._has("publisher"))
    @rule(target=values, publisher=publishers)
    def clone_publisher(self, publisher: Named) -> Any:
        name = self._name()
        out = self._run_json("clone_publisher", {"publisher": publisher.name, "as": name})
        return self._made(out, name, "publisher")

    @rule(target=values, data=st.data(), size=st.integers(1, 3), n=st.integers(0, 4))
    def partial_state(self, data: st.DataObject, size: int, n: int) -> Named:  # type: ignore[override]
        name = f"v{self.fresh + 1}"  # the name the current rule gives its new state
        RegistryMachine.partial_state(self, data, size, n)
        return Named(name, "state")


def run(cls: type[Machine], **kw: Any) -> machines.HypothesisResult:
    orig = machines.machine_class
    machines.machine_class = lambda _c: cls  # type: ignore[assignment]
    try:
        return machines.run(COMPONENT, **kw)
    finally:
        machines.machine_class = orig  # type: ignore[assignment]


def main() -> None:
    sides: dict[str, type[Machine]] = {"bundles": BundleRegistryMachine, "peer_index_draws": RegistryMachine}
    out: dict[str, Any] = {"kvmodel": __version__, "python": platform.python_version(), "machine": platform.machine()}
    for label in sides:
        out[label] = {"time_to_find": []}
    for q in quirks_of(COMPONENT):
        per: dict[str, list[dict[str, Any]]] = {label: [] for label in sides}
        for seed in SEEDS:
            for label, cls in sides.items():
                t = time.perf_counter()
                r = run(cls, quirks=(q.name,), target=q.breaks, max_examples=3000, seed=seed)
                per[label].append(
                    {
                        "seed": seed,
                        "found": r.trace is not None,
                        "seconds": round(time.perf_counter() - t, 3),
                        "first_failure_s": round(r.seconds_to_first_failure, 3)
                        if r.seconds_to_first_failure is not None
                        else None,
                        "examples": r.examples,
                        "steps": len(r.trace["steps"]) if r.trace else None,
                    }
                )
        for label, rows in per.items():
            lengths = [x["steps"] for x in rows if x["found"]]
            firsts = [x["first_failure_s"] for x in rows if x["first_failure_s"] is not None]
            row = {
                "quirk": q.name,
                "found": len(lengths),
                "median_seconds": round(statistics.median(x["seconds"] for x in rows), 3),
                "median_first_failure_s": round(statistics.median(firsts), 3) if firsts else None,
                "median_length": statistics.median(lengths) if lengths else None,
                "max_length": max(lengths) if lengths else None,
                "seeds": rows,
            }
            out[label]["time_to_find"].append(row)
            print(
                f"{q.name:<34} {label:<17} found {row['found']}/{len(SEEDS)}  median {row['median_seconds']:6.2f}s"
                f"  first failure {row['median_first_failure_s']}s"
                f"  length {row['median_length']} (max {row['max_length']})",
                flush=True,
            )
    for label, cls in sides.items():
        t = time.perf_counter()
        r = run(cls, max_examples=300, seed=0)
        dt = time.perf_counter() - t
        out[label]["ideal"] = {"steps": r.steps, "seconds": round(dt, 3), "steps_per_s": round(r.steps / dt)}
        print(f"{label}: ideal {out[label]['ideal']['steps_per_s']} steps/s", flush=True)
    path = ROOT / "benchmarks" / "results" / "registry_machine.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
