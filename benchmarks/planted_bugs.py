"""The implementation-mutation benchmark (issue 23): planted one-line bugs in example
implementations written the way users write them, each checked by
:func:`kvmodel.api.check_implementation` at its default settings.

* ``examples/my_kv_manager.py`` (the mocker's KV manager, ideal model), ``examples/my_router.py``
  (the router's indexer, ideal model, answering a state), ``examples/my_lru.py``
  (the LRU evictor, counter and wall-clock components), ``examples/my_registry.py`` (the KVBM block
  registry of dynamo-llm 1.0.2, ideal model), ``examples/my_g1_native.py`` (the native G1 backend,
  ideal model) and the C evictor of
  ``examples/harness/lru_counter.c`` over the harness (``kvmodel conform --target exec``).
* The KVBM backend: each of its known defects (``kvmodel quirks g1_kvbm``) planted alone in
  kvmodel's own model (``ModelAdapter("g1_kvbm", [quirk])``) and checked against the ideal model:
  whether a default run reaches the defect's condition. And a MultiLru index blind to
  frequencies, checked with that index configured.
* For every bug: caught or not, the workloads generated until the first divergence
  (time-to-catch in workloads), the seconds of the whole check (generation, shrinking included)
  and the shrunk counterexample's length.
* **Invariant mode**: the same bug checked with ``check="invariants"`` (no reference revision:
  the component's declared invariants on the adapter's observations), so each row says which
  mode catches it.
* **Peer**: the same checks with the generator before issue 23 — one pick among the explorer's
  moves and the fixed queries, uniformly, 30-step workloads (reimplemented below) — in the same
  run.

Writes ``benchmarks/results/planted_bugs.json``. Usage: ``python benchmarks/planted_bugs.py
[--component NAME]`` (one component's bugs only, into ``planted_bugs_<NAME>.json``).
"""

from __future__ import annotations

import importlib.util
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from kvmodel import api, harness, jsonio

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "planted_bugs.json"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# the queries the old generator drew (the only operations besides the explorer's moves)
_OLD_QUERIES = {
    "kv_manager": [("current_capacity", {}), ("num_active_blocks", {}), ("num_inactive_blocks", {})],
    "lru_evictor_counter": [("len", {})],
    "lru_evictor_wallclock": [("len", {})],
}


def old_concrete(
    component: str,
    config: dict[str, Any],
    quirks: Sequence[str],
    picks: Sequence[int],
    sp: Any,
    only: frozenset[str] | None = None,
) -> list[tuple[str, Any]]:
    """The generator before issue 23: a pick is one of all moves and queries, uniformly; an odd
    pick looks by a stride for a move the model accepts (``only``, the operations an adapter
    declares, did not exist then: every adapter here implements them all)."""
    queries = _OLD_QUERIES.get(component, [])
    moves = sp.moves()
    s = sp.system(config, quirks)
    ops: list[tuple[str, Any]] = []
    total = len(moves) + len(queries)
    for pick in picks:
        n = (pick >> 1) % total
        if n >= len(moves):
            ops.append(queries[n - len(moves)])
            continue
        chosen = None
        for k in range(64 if pick & 1 else 1):
            m = moves[(n + 97 * k) % len(moves)]
            if not sp.allows(s, m):
                continue
            op, decoded, args = sp.concrete(s, m)
            if op is None or args is None:
                continue
            if pick & 1 and s.clone().apply(op, decoded).error is not None:
                continue
            chosen = (op, decoded, args)
            break
        if chosen is None:
            continue
        s.apply(chosen[0], chosen[1])
        ops.append((chosen[0], chosen[2]))
    return ops


def cases() -> list[tuple[str, str, str, Any]]:
    """(implementation, component, bug, adapter factory)."""
    kv, lru, reg, g1 = _load("my_kv_manager"), _load("my_lru"), _load("my_registry"), _load("my_g1_native")
    router = _load("my_router")
    out: list[tuple[str, str, str, Any]] = []
    for bug in kv.BUGS:
        out.append(("my_kv_manager.py", "kv_manager", bug, lambda b=bug: kv.MyAdapter(b)))
    for bug in lru.BUGS:
        comp = "lru_evictor_counter" if bug == "push_front_to_back" or len(out) % 2 else "lru_evictor_wallclock"
        out.append(("my_lru.py", comp, bug, lambda b=bug: lru.MyLruAdapter(b)))
    for bug in reg.BUGS:
        out.append(("my_registry.py", "kvbm_block_registry", bug, lambda b=bug: reg.MyRegistryAdapter(b)))
    for bug in g1.BUGS:
        out.append(("my_g1_native.py", "g1_native", bug, lambda b=bug: g1.MyG1NativeAdapter(b)))
    for bug in router.BUGS:  # with a state in every answer: the tree's own structure is shown
        out.append(
            ("my_router.py", "kv_router_radix_tree", bug, lambda b=bug: router.MyRouterAdapter(b, snapshot=True))
        )
    # the KVBM backend: its known defects planted one at a time in kvmodel's own model (the
    # in-batch registration, a failed Use's inactive order, a partial commit, the counts, ...),
    # checked against the ideal model: whether a default run reaches each defect's condition
    from kvmodel.model.quirks import quirks_of

    for q in quirks_of("g1_kvbm"):
        out.append(("kvmodel g1_kvbm + quirk", "g1_kvbm", q.name, lambda n=q.name: api.ModelAdapter("g1_kvbm", [n])))
    out.append(("kvmodel g1_kvbm, MultiLru", "g1_kvbm", "multi_lru_ignores_frequency", FrequencyBlindMultiLru))
    return out


class FrequencyBlindMultiLru(api.ModelAdapter):
    """A MultiLru index that never leaves its lowest level: the model's plain LRU index where
    the run asks for MultiLru (checked with ``config={"eviction_backend": "MultiLru"}``), which
    a run catches only if its workloads touch cached blocks often enough to promote them."""

    run_config: ClassVar[dict[str, str]] = {"eviction_backend": "MultiLru"}

    def __init__(self) -> None:
        super().__init__("g1_kvbm")

    def reset(self, config: dict[str, Any]) -> None:
        super().reset({**config, "eviction_backend": "Lru"})


def _c_binary(tmp: Path) -> Path | None:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    exe = tmp / "lru_counter"
    subprocess.run([cc, "-O2", "-o", str(exe), str(ROOT / "examples/harness/lru_counter.c")], check=True)
    return exe


def run_one(component: str, make: Any, max_steps: int | None = None, check: str = "equal") -> dict[str, Any]:
    adapter = make()
    t0 = time.perf_counter()
    try:
        rep = api.check_implementation(
            adapter,
            component,
            config=getattr(adapter, "run_config", None),
            step_timeout=None,
            max_steps=max_steps,
            check=check,
        )
    finally:
        if hasattr(adapter, "close"):
            adapter.close()
    return {
        "caught": not rep.ok,
        "workloads_to_catch": rep.workloads if not rep.ok else None,
        "seconds": round(time.perf_counter() - t0, 3),
        "shrunk_length": len(rep.ops or []) if not rep.ok else None,
        "kind": rep.divergence.what if rep.divergence else None,
        **(
            {"invariant": rep.divergence.model["invariant"]}
            if rep.divergence is not None and rep.divergence.what == "invariant"
            else {}
        ),
    }


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--component", help="only this component's bugs (results: planted_bugs_<component>.json)")
    ap.add_argument(
        "--modes",
        action="store_true",
        help="equality against invariant mode only, without the old generator (results: planted_bugs_modes.json)",
    )
    a = ap.parse_args()
    only, modes = a.component, a.modes
    out = OUT if only is None else OUT.with_name(f"planted_bugs_{only}.json")
    if modes:
        out = out.with_name(out.stem + "_modes.json")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        all_cases = [c for c in cases() if only is None or c[1] == only]
        exe = _c_binary(Path(tmp)) if only in (None, "lru_evictor_counter") else None
        if exe is not None:
            all_cases.append(
                (
                    "harness/lru_counter.c",
                    "lru_evictor_counter",
                    "evict_newest",
                    lambda: harness.ExecAdapter([str(exe), "--bug", "evict_newest"]),
                )
            )
        for impl, comp, bug, make in all_cases:
            new = run_one(comp, make)
            old = {"caught": False, "workloads_to_catch": None, "seconds": 0.0, "shrunk_length": None, "kind": None}
            if not modes:
                saved = api._concrete
                api._concrete = old_concrete  # type: ignore[assignment]
                try:
                    old = run_one(comp, make, max_steps=30)
                finally:
                    api._concrete = saved  # type: ignore[assignment]
            inv = run_one(comp, make, check="invariants")
            row = {"implementation": impl, "component": comp, "bug": bug, "kvmodel": new, "peer": old}
            rows.append(row | {"invariant_mode": inv})
            print(
                f"{impl:24} {comp:22} {bug:30} caught {new['caught']!s:5} after {new['workloads_to_catch']} "
                f"workloads, shrunk to {new['shrunk_length']}; peer caught {old['caught']}; invariant mode "
                f"caught {inv['caught']} ({inv.get('invariant', inv['kind'])})",
                flush=True,
            )
    caught = sum(r["kvmodel"]["caught"] for r in rows)
    peer = sum(r["peer"]["caught"] for r in rows)
    both = [r for r in rows if r["kvmodel"]["caught"] and r["peer"]["caught"]]
    summary = {
        "bugs": len(rows),
        "caught": caught,
        "peer_caught": peer,
        "median_workloads_to_catch": sorted(r["kvmodel"]["workloads_to_catch"] for r in rows if r["kvmodel"]["caught"])[
            caught // 2
        ]
        if caught
        else None,
        "max_shrunk_length": max((r["kvmodel"]["shrunk_length"] or 0) for r in rows),
        "seconds": round(sum(r["kvmodel"]["seconds"] for r in rows), 1),
        "peer_seconds": round(sum(r["peer"]["seconds"] for r in rows), 1),
        # invariant mode (no reference revision: the declared invariants on the adapter's
        # observations; the examples give no state snapshot, so only what events and returns show)
        "invariant_mode_caught": sum(r["invariant_mode"]["caught"] for r in rows),
        "invariant_mode_seconds": round(sum(r["invariant_mode"]["seconds"] for r in rows), 1),
        "workloads_ratio_on_bugs_both_catch": round(
            sum(r["peer"]["workloads_to_catch"] for r in both)
            / max(1, sum(r["kvmodel"]["workloads_to_catch"] for r in both)),
            2,
        ),
    }
    if modes:  # no old-generator peer in this run: its figures would be zeros, not measurements
        for k in ("peer_caught", "peer_seconds", "workloads_ratio_on_bugs_both_catch"):
            summary.pop(k)
        for r in rows:
            r.pop("peer")
    doc = {
        "benchmark": "planted bugs in example implementations, check_implementation at default settings"
        + (": equality mode against invariant mode" if modes else ""),
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "summary": summary,
        "rows": rows,
    }
    jsonio.write_text(out, json.dumps(doc, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
