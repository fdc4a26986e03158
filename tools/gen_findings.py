"""Write docs/findings.md: each quirk's minimal counterexample.

Usage: python tools/gen_findings.py  (deterministic: same model, same seed, same bytes)

Each component that declares findings (``kvmodel/components/<name>/findings.py``: its quirks'
consequences, what a real binary says, and its section) gets a section, in registry order; the
section draws its counterexamples either from Hypothesis (seed 0, shrunk, then reduced to
1-minimal by step deletion) or from the explorer (BFS minimum). Each finding embeds its steps as
JSON; stateful_tests/test_findings.py replays them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvmodel import components, explorer, invariants, jsonio, machines
from kvmodel.components.base import resolve
from kvmodel.model.quirks import QUIRKS, quirk_revisions, quirks_of

ROOT = Path(__file__).resolve().parents[1]


def fmt_events(obs: dict[str, Any]) -> str:
    out = []
    for e in obs.get("events", []):
        if "data" in e:  # a KvCacheEvent (G1 era)
            d = e["data"]
            if d == "cleared":
                out.append("Cleared")
            elif "stored" in d:
                hs = [f"#{str(b['block_hash'])[-5:]}" for b in d["stored"]["blocks"]]
                p = d["stored"]["parent_hash"]
                out.append(f"Stored([{', '.join(hs)}], parent={'None' if p is None else '#' + str(p)[-5:]})")
            else:
                out.append(f"Removed([{', '.join('#' + str(h)[-5:] for h in d['removed']['block_hashes'])}])")
            continue
        if "kind" in e:  # a registry event
            out.append(
                f"{e['kind']}({e['sequence_hash']}, {e['tier']})" if e["tier"] else f"{e['kind']}({e['sequence_hash']})"
            )
            continue
        ((k, v),) = e.items()
        if k == "Store":
            out.append(f"Store({v['blocks']}, parent={v['parent_hash']})")
        else:
            out.append(f"Remove({v['blocks']})")
    return ", ".join(out) or "none"


def fmt_args(op: str, args: Any) -> str:
    if op == "process" and isinstance(args, dict) and len(args) == 1:
        ((k, v),) = args.items()
        if isinstance(v, list):
            blocks = ", ".join(f"F{b['F']}" if "F" in b else f"P:{b['P']}" for b in v)
            return f"{k}([{blocks}])"
        return f"{k}({', '.join(f'{a}={b}' for a, b in v.items())})"
    return f"{op}({json.dumps(args)})"


def _finding_json(t: dict[str, Any], invariant: str) -> list[str]:
    finding = {
        "component": t["component"],
        "config": t["config"],
        "quirks": t["quirks"],
        "invariant": invariant,
        "steps": [{"op": s["op"], "args": s["args"]} for s in t["steps"]],
    }
    return ["", "```json", json.dumps(finding, sort_keys=True), "```", ""]


class Helpers:
    """What a component's findings section uses: the index, the BFS minima, the renderers."""

    def __init__(self) -> None:
        man = json.loads((ROOT / "specs" / "manifest.json").read_text())["entries"]
        self.manifest = [e for e in man if e.get("engine", "explore") == "explore"]
        self.bfs = {e["name"]: e["expect"]["violations"] for e in self.manifest}
        self.index: list[tuple[str, str, str, int, str]] = []  # quirk, component, invariant, steps, binary
        self.consequence: dict[str, str] = {}
        for c in components.registered():
            if c.findings is not None:
                self.consequence.update(resolve(c.findings).CONSEQUENCE)

    def binary(self, q: Any) -> str:
        """Whether a real binary confirms the quirk, and the revisions of the real code that have it."""
        c = components.get(q.component)
        said = resolve(c.findings).binary(q) if c.findings is not None else "no binary"
        return f"{said}; revision(s) {', '.join(quirk_revisions(q.name))}"

    def hypothesis_quirks(
        self,
        component: str,
        config: dict[str, Any],
        real: Callable[[Any], str],
        reachable: Callable[[Any], bool] | None,
        lemmas: bool = True,
    ) -> list[str]:
        """Each quirk of ``component`` alone, found by Hypothesis (seed 0) and reduced to 1-minimal
        (``lemmas=False``: the counterexample of an invariant that is not a lemma, the user-facing
        consequence, rather than the shorter one of the model's own bookkeeping)."""
        lines: list[str] = []
        lemma_names = {i.name for i in invariants.for_component(component) if i.lemma}
        for q in quirks_of(component):
            target = q.breaks if lemmas else tuple(b for b in q.breaks if b not in lemma_names) or q.breaks
            r = machines.run(component, config=config, quirks=(q.name, *q.requires), target=target, max_examples=3000)
            assert r.trace is not None and r.violation is not None, q.name
            t = r.trace
            self.index.append((q.name, q.component, r.violation["invariant"], len(t["steps"]), self.binary(q)))
            minima = next((v for n, v in self.bfs.items() if n.startswith(f"quirk-{q.name}-")), {})
            depths = ", ".join(f"`{k}` {v}" for k, v in sorted(minima.items(), key=lambda x: x[1]))
            lines += [f"## `{q.name}` ({q.component}, semantics {q.ref})", "", q.summary, ""]
            lines += [
                f"- Invariant broken: `{r.violation['invariant']}` — {r.violation['message']}",
                f"- Minimal counterexample: {len(t['steps'])} step(s); quirks on: {', '.join(t['quirks'])}",
            ]
            if reachable is not None:
                found = "yes" if reachable(q) else "not found (needs API misuse)"
                lines.append(f"- Reachable from ordinary requests: {found}")
            if components.get(q.component).spec is not None:
                ideal = (
                    "- Ideal variant: with this quirk off the machine runs clean (`kvmodel check --ideal`) and every "
                    f"invariant is proved by k-induction (`kvmodel prove --component {q.component}`)" + _unproved(q)
                )
            else:
                ideal = (
                    "- Ideal variant: with this quirk off the machine runs clean (`kvmodel check --ideal`: Hypothesis, "
                    "and the explorer exhaustively in its worlds; this component has no Z3 spec)"
                )
            lines += [
                "- All invariants it breaks, with the BFS-minimal depth (explorer; KV manager: capacity 2, 3 ids,"
                " batches of at most 2; LRU: 2 objects; `specs/manifest.json`): " + (depths or "not explored"),
                f"- Consequence: {self.consequence[q.name]}",
                real(q),
                ideal,
                "",
            ]
            for i, s in enumerate(t["steps"]):
                obs = s["observe"]
                res = f"error `{obs['error']['id']}`" if "error" in obs else f"returns {json.dumps(obs.get('returns'))}"
                lines.append(f"{i + 1}. `{fmt_args(s['op'], s['args'])}` → {res}; events: {fmt_events(obs)}")
            lines += _finding_json(t, r.violation["invariant"])
        return lines

    def explored_quirks(self, component: str, suffix: str) -> list[str]:
        """Each quirk of ``component`` in its manifest world (``quirk-NAME-SUFFIX``): the BFS-shortest
        counterexample."""
        c = components.get(component)
        lines: list[str] = []
        for q in quirks_of(component):
            entry = next(e for e in self.manifest if e["name"] == f"quirk-{q.name}-{suffix}")
            space = c.explore_space(components.World(entry["config"], entry["space"]))
            r = explorer.explore(entry["config"], entry["quirks"], space)
            inv = min(r.violations, key=lambda n: (r.violations[n]["depth"], n))
            t = explorer.violation_trace(r, inv)
            v = t["violation"]
            self.index.append((q.name, q.component, v["invariant"], len(t["steps"]), self.binary(q)))
            depths = sorted(self.bfs[entry["name"]].items(), key=lambda x: (x[1], x[0]))
            alias = c.aliases[0] if c.aliases else c.name
            lines += [
                f"## `{q.name}` ({q.component}, semantics {q.ref})",
                "",
                q.summary,
                "",
                f"- Invariant broken: `{v['invariant']}` — {v['message']}",
                f"- Minimal counterexample: {len(t['steps'])} step(s) (BFS minimum); "
                f"quirks on: {', '.join(t['quirks'])}",
                "- All invariants it breaks, with the BFS-minimal depth: " + ", ".join(f"`{k}` {d}" for k, d in depths),
                f"- Consequence: {self.consequence[q.name]}",
                "- Ideal variant: with this quirk off the world runs clean under Hypothesis and exhaustive "
                f"exploration (`kvmodel check --component {alias}`), and the spec's invariants are proved by "
                f"k-induction (`kvmodel prove --component {alias}`).",
                "",
            ]
            for i, st_ in enumerate(t["steps"]):
                obs = st_["observe"]
                res = f"error `{obs['error']['id']}`" if "error" in obs else f"returns {json.dumps(obs.get('returns'))}"
                lines.append(
                    f"{i + 1}. `{st_['op']}({json.dumps(st_['args'], sort_keys=True)})` → {res}; "
                    f"events: {fmt_events(obs)}"
                )
            lines += _finding_json(t, v["invariant"])
        return lines

    def index_lines(self) -> list[str]:
        out = [
            "## Index",
            "",
            "| quirk | component | invariant broken (first found) | minimal trace | confirmed on a real binary |",
            "|---|---|---|---|---|",
        ]
        for q, comp, inv, n, real in self.index:
            out.append(f"| `{q}` | {comp} | `{inv}` | {n} step{'' if n == 1 else 's'} | {real} |")
        out += [
            "",
            "In every row the ideal variant (the quirk off) holds under Hypothesis and exhaustive exploration",
            "(`kvmodel check`), it is also proved by k-induction (`kvmodel prove --component NAME`) where the Z3",
            "spec models the invariant (its section says where it does not), and BMC finds the quirk's violations",
            "at the explorer's minimal depths.",
            "",
        ]
        return out


_SPEC_PROPERTIES: dict[str, set[str]] = {}


def _unproved(q: Any) -> str:
    """``.``, or the part of the sentence naming the broken invariants the Z3 spec does not model
    (checked by Hypothesis and exhaustive exploration only)."""
    from kvmodel.specs import make_spec

    if q.component not in _SPEC_PROPERTIES:
        _SPEC_PROPERTIES[q.component] = {p.name for p in make_spec(q.component, {}).ts.properties}
    out = [i for i in q.breaks if i not in _SPEC_PROPERTIES[q.component]]
    if not out:
        return "."
    names = ", ".join(f"`{i}`" for i in out)
    return f", except {names}, which the Z3 spec does not model (Hypothesis and exhaustive exploration check it)."


def main() -> None:
    h = Helpers()
    lines = [
        "# Findings: Dynamo's KV-block management defects as minimal counterexamples",
        "",
        "Generated by `python tools/gen_findings.py` (Hypothesis, seed 0, each counterexample shrunk and then",
        "reduced to 1-minimal by step deletion; the explorer's BFS for the components it explores). Every",
        "trace below is replayed by",
        "`stateful_tests/test_findings.py`, which checks it still breaks the named invariant at its last step.",
        "To re-run one: save the JSON block as a trace (see `docs/trace-format.md`) or run",
        "`kvmodel check --component NAME` and `kvmodel replay kvmodel-traces/<file>.json`.",
        "",
        "Each quirk is switched on alone (with the quirks it requires) on top of the ideal model, so the trace",
        "shows that defect and nothing else. The faithful model has its revision's quirks on at once; `kvmodel",
        "check --faithful` reports whichever it meets first.",
        "",
    ]
    for c in components.registered():
        if c.findings is not None:
            lines += resolve(c.findings).section(h)
    missing = set(QUIRKS) - set(h.consequence)
    assert not missing, missing
    cut = lines.index("") + 1  # after the title
    lines[cut:cut] = h.index_lines()
    jsonio.write_text(ROOT / "docs" / "findings.md", "\n".join(lines))


if __name__ == "__main__":
    main()
