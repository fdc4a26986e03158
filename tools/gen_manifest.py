"""Write specs/manifest.json: explorer entries with pinned verdicts and state counts.

Usage: python tools/gen_manifest.py. Each entry: component, configuration, bounded space,
mode and quirks, the expected verdict, the distinct-state counts with and without symmetry,
and, for entries that violate invariants, each violated invariant with its minimal depth.
``seconds`` is the time measured here; stateful_tests/test_explorer.py re-runs every entry
under 10 s and checks the verdicts and counts.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from kvmodel import explorer
from kvmodel.model.quirks import faithful, quirks_of, revision

ROOT = Path(__file__).resolve().parents[1]

SMALL = {"n_full": 3, "partials": 1, "max_batch": 2, "max_refcount": 2}
ENTRIES: list[dict[str, Any]] = [
    {"name": "ideal-c2", "config": {"max_capacity": 2}, "space": SMALL, "quirks": []},
    {
        "name": "ideal-c2-counter-nochannel",
        "config": {"max_capacity": 2, "evictor": "counter", "channel": False},
        "space": SMALL,
        "quirks": [],
    },
    {"name": "ideal-c3-b4-cli-defaults", "config": {"max_capacity": 3}, "space": {**SMALL, "n_full": 4}, "quirks": []},
    {"name": "ideal-c3", "config": {"max_capacity": 3}, "space": {**SMALL, "n_full": 4, "partials": 2}, "quirks": []},
    {"name": "ideal-c4-b6", "config": {"max_capacity": 4}, "space": {**SMALL, "n_full": 6}, "quirks": []},
    {
        "name": "ideal-c4-b6-batch3",
        "config": {"max_capacity": 4},
        "space": {**SMALL, "n_full": 6, "max_batch": 3},
        "quirks": [],
    },
    {"name": "faithful-c2", "config": {"max_capacity": 2}, "space": SMALL, "quirks": sorted(faithful("kv_manager"))},
]
for q in quirks_of("kv_manager"):
    ENTRIES.append(
        {
            "name": f"quirk-{q.name}-c2",
            "config": {"max_capacity": 2},
            "space": SMALL,
            "quirks": sorted({q.name, *q.requires}),
        }
    )
LRU = [
    ("lru_evictor_wallclock", "lru-wallclock-ideal-3", {"cleanup_threshold": 1}, {"objects": 3, "max_queue": 6}, []),
    ("lru_evictor_counter", "lru-counter-3", {}, {"objects": 3, "max_queue": 6}, []),
    (
        "lru_evictor_wallclock",
        "quirk-equal_timestamp_stale_entry-2-t1",
        {"cleanup_threshold": 1},
        {"objects": 2, "max_queue": 4},
        ["equal_timestamp_stale_entry"],
    ),
    (
        "lru_evictor_wallclock",
        "quirk-equal_timestamp_stale_entry-3-t1",
        {"cleanup_threshold": 1},
        {"objects": 3, "max_queue": 6},
        ["equal_timestamp_stale_entry"],
    ),
    (
        "lru_evictor_wallclock",
        "quirk-equal_timestamp_stale_entry-2-t50",
        {"cleanup_threshold": 50},
        {"objects": 2, "max_queue": 4},
        ["equal_timestamp_stale_entry"],
    ),
]
for comp, name, cfg, sp, qs in LRU:
    ENTRIES.append({"name": name, "component": comp, "config": cfg, "space": sp, "quirks": qs})


REG = {"hashes": 1, "states": 2, "publish_handles": 1, "arcs": 0, "publishers": 2, "max_pending": 1}
REG_ENTRIES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("registry-ideal", REG, []),
    ("registry-ideal-arcs", {**REG, "arcs": 1}, []),
    ("registry-ideal-shared-3", {**REG, "states": 3, "publishers": 1, "shared": 1}, []),
    ("registry-faithful", REG, sorted(faithful("kvbm_block_registry"))),
    ("registry-revision-403dd259", REG, sorted(revision("kvbm_block_registry", "403dd259").quirks)),
]
REG_ENTRIES += [(f"quirk-{q.name}-registry", REG, [q.name]) for q in quirks_of("kvbm_block_registry")]
for name, sp, qs in REG_ENTRIES:
    ENTRIES.append({"name": name, "component": "kvbm_block_registry", "config": {}, "space": sp, "quirks": qs})


G1 = {"owners": 2, "prompts": 2, "pushes": 1, "decode": 1}
G1_ENTRIES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("g1-ideal", G1, []),
    ("g1-ideal-3-prompts", {**G1, "prompts": 3, "decode": 0}, []),
    ("g1-faithful", G1, sorted(faithful("g1_native"))),
    ("g1-revision-366ff0ef", G1, sorted(revision("g1_native", "366ff0ef").quirks)),
]
G1_ENTRIES += [(f"quirk-{q.name}-g1", G1, [q.name]) for q in quirks_of("g1_native")]
for name, sp, qs in G1_ENTRIES:
    ENTRIES.append({"name": name, "component": "g1_native", "config": {}, "space": sp, "quirks": qs})


KVBM = {"owners": 1, "prompts": 5, "pushes": 0, "decode": 0}
KVBM_ENTRIES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("kvbm-ideal", KVBM, []),
    ("kvbm-ideal-2-owners", {**KVBM, "owners": 2}, []),
]
KVBM_ENTRIES += [(f"quirk-{q.name}-kvbm", KVBM, [q.name]) for q in quirks_of("g1_kvbm")]
for name, sp, qs in KVBM_ENTRIES:
    ENTRIES.append({"name": name, "component": "g1_kvbm", "config": {"max_capacity": 2}, "space": sp, "quirks": qs})


def space_of(entry: dict[str, Any]) -> explorer.Space:
    comp = entry.get("component", "kv_manager")
    if comp == "kv_manager":
        return explorer.KvSpace(**entry["space"])
    if comp == "kvbm_block_registry":
        return explorer.RegSpace(**entry["space"])
    if comp == "g1_native":
        return explorer.G1Space(**entry["space"])
    if comp == "g1_kvbm":
        return explorer.KvbmSpace(**entry["space"])
    return explorer.LruSpace(comp, **entry["space"])


def run(entry: dict[str, Any]) -> dict[str, Any]:
    space = space_of(entry)
    t = time.perf_counter()
    r = explorer.explore(entry["config"], entry["quirks"], space)
    dt = time.perf_counter() - t
    out = {
        "component": "kv_manager",
        **entry,
        "mode": "ideal" if not entry["quirks"] else ("faithful" if len(entry["quirks"]) > 2 else "quirk"),
        "expect": {
            "verdict": "holds" if not r.violations else "violated",
            "states_symmetry": r.states,
            "states_full": r.concrete_states,
            "transitions_symmetry": r.transitions,
            "depth": r.depth,
            "violations": {k: v["depth"] for k, v in sorted(r.violations.items())},
            "witnesses_missing": r.missing_witnesses,
        },
        "seconds": round(dt, 2),
    }
    print(f"{entry['name']:<48} {r.states:>7} / {r.concrete_states:>8} states  {dt:6.2f}s", flush=True)
    return out


def main() -> None:
    if sys.argv[1:2] == ["--only"] and len(sys.argv) == 3:  # add or refresh one component's entries
        only = sys.argv[2]
        data = json.loads((ROOT / "specs" / "manifest.json").read_text())
        keep = [e for e in data["entries"] if e.get("component") != only]
        data["entries"] = keep + [run(e) for e in ENTRIES if e.get("component") == only]
        (ROOT / "specs" / "manifest.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        return
    data = {
        "format": "kvmodel-manifest/1",
        "note": "Generated by tools/gen_manifest.py; checked by stateful_tests/test_explorer.py.",
        "entries": [run(e) for e in ENTRIES],
    }
    (ROOT / "specs" / "manifest.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
