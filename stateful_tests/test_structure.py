"""The package's structure (issue 21): one record per component, found by lookup.

* No code outside ``kvmodel/components/`` and a component's own model, invariants and spec
  files names a component: every string literal in ``kvmodel/``, ``specs/`` and ``tools/``
  that equals a registered name or alias is reported.
* A toy component (``toy_counter.py``: its own file, one ``components.register``) is picked up
  by ``kvmodel check``, ``explore``, ``prove``, ``bmc``, ``invariants``, ``quirks``, the
  Hypothesis-free matrix and the differential API.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from kvmodel import cli, components, invariants, suite
from kvmodel.api import check_implementation
from kvmodel.model.quirks import QUIRKS, quirks_of

from . import toy_counter

ROOT = Path(__file__).resolve().parents[1]

# Files that belong to one component (its model, invariants and spec) may name it.
OWN = {
    "kv_manager": ("model/kv_manager.py", "invariants/kv_manager.py", "specs/kv_manager.py"),
    "lru_evictor_wallclock": ("model/lru.py", "invariants/lru.py", "specs/lru.py"),
    "lru_evictor_counter": ("model/lru.py", "invariants/lru.py", "specs/lru.py"),
    "kvbm_block_registry": ("model/registry.py", "invariants/registry.py", "specs/registry.py"),
    "g1_native": ("model/g1/", "invariants/g1.py", "specs/g1.py"),
    "g1_kvbm": ("model/g1/", "invariants/kvbm.py", "specs/kvbm.py"),
    "kv_router_radix_tree": ("model/router.py", "invariants/router.py"),
    "kv_event_publisher": ("model/publisher.py", "invariants/publisher.py", "specs/publisher.py"),
}
# A literal that is not the component: an operation's argument key that happens to be spelled
# like an alias, in the campaign that fuzzes argument keys.
NOT_A_COMPONENT = {("tools/fuzz_campaign.py", "registry")}


def _string_constants(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def _files() -> Iterator[Path]:
    for top in ("kvmodel", "specs", "tools", "model", "invariants"):
        for p in sorted((ROOT / top).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if not rel.startswith("kvmodel/components/"):
                yield p


def test_no_code_outside_the_components_names_a_component() -> None:
    names = {n: c.name for c in components.registered() for n in c.names}
    found = []
    for p in _files():
        rel = p.relative_to(ROOT).as_posix()
        for line, value in _string_constants(ast.parse(p.read_text(), rel)):
            owner = names.get(value)
            if owner is None or (rel, value) in NOT_A_COMPONENT:
                continue
            if any(rel == f or (f.endswith("/") and rel.startswith(f)) for f in OWN.get(owner, ())):
                continue
            if rel in ("model/quirks.py", "model/errors.py"):  # the model's catalogues, by component
                continue
            found.append(f"{rel}:{line}: {value!r}")
    assert found == []


def test_the_grep_finds_a_planted_literal(tmp_path: Path) -> None:
    """The literal scan is not vacuous: it sees a name in a call, a comparison and a default."""
    src = 'def f(c: str = "kv_manager") -> bool:\n    return c == "registry" or g("g1")\n'
    got = [v for _, v in _string_constants(ast.parse(src))]
    assert {"kv_manager", "registry", "g1"} <= set(got)


def test_every_component_is_reachable_by_each_of_its_names() -> None:
    for c in components.registered():
        for n in c.names:
            assert components.get(n) is c
    with pytest.raises(components.UnknownComponent, match="unknown component 'nope'"):
        components.get("nope")


def test_cli_is_parsing_and_printing_only() -> None:
    assert len((ROOT / "kvmodel" / "cli.py").read_text().splitlines()) < 500


# ----------------------------------------------------------------------------- the toy


@pytest.fixture
def toy() -> Iterator[components.Component]:
    c = components.register(toy_counter.COMPONENT)
    try:
        yield c
    finally:
        components.unregister(c.name)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        rc = cli.main(argv)
    except SystemExit as e:
        rc = int(e.code or 0)
    return rc, capsys.readouterr().out


def test_registering_the_toy_adds_its_quirk_and_invariant_and_removing_it_takes_them_away(
    toy: components.Component,
) -> None:
    assert [q.name for q in quirks_of("toy_counter")] == ["dec_wraps"]
    assert [i.name for i in invariants.for_component("toy_counter")] == ["toy.nonnegative"]
    components.unregister(toy.name)
    try:
        assert "dec_wraps" not in QUIRKS and invariants.for_component("toy_counter") == ()
    finally:
        components.register(toy)


def test_toy_quirks_and_invariants_commands(toy: components.Component, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(["quirks", "--component", "toy", "--json"], capsys)
    assert rc == 0 and [q["name"] for q in json.loads(out)["quirks"]] == ["dec_wraps"]
    rc, out = _run(["invariants", "--component", "toy_counter", "--json"], capsys)
    assert rc == 0 and [i["name"] for i in json.loads(out)["invariants"]] == ["toy.nonnegative"]


def test_toy_explore(toy: components.Component, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, out = _run(["explore", "--component", "toy", "--ideal", "--limit", "3", "--json"], capsys)
    got = json.loads(out)
    assert rc == 0 and got["states"] == 4 and got["violations"] == {}
    rc, out = _run(["explore", "--component", "toy", "--faithful", "--out", str(tmp_path), "--json"], capsys)
    got = json.loads(out)
    assert rc == 1 and got["violations"]["toy.nonnegative"]["depth"] == 1
    rc, out = _run(["replay", next(iter(got["traces"].values()))], capsys)
    assert rc == 1 and "toy.nonnegative" in out


def test_toy_prove_and_bmc(toy: components.Component, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, out = _run(["prove", "--component", "toy", "--json"], capsys)
    assert rc == 0 and json.loads(out)["all_proved"]
    rc, out = _run(
        ["bmc", "--component", "toy", "--faithful", "--depth", "3", "--out", str(tmp_path), "--json"], capsys
    )
    rows = {r["invariant"]: r for r in json.loads(out)["invariants"]}
    assert rc == 1 and rows["toy.nonnegative"]["status"] == "violated" and rows["toy.nonnegative"]["k"] == 1


def test_toy_check_runs_the_matrix_on_every_engine_that_supports_it(
    toy: components.Component, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, out = _run(["check", "--component", "toy", "--out", str(tmp_path), "--json"], capsys)
    got = json.loads(out)
    rows = {(r["engine"], r["check"].split(" (")[0]): r for r in got["results"]}
    assert rc == 0 and got["verdict"] == "pass"
    quirk = "quirk dec_wraps"
    assert set(rows) == {(e, k) for e in ("explore", "hypothesis", "z3") for k in ("ideal", quirk)}
    assert rows[("explore", quirk)]["violation"]["invariant"] == "toy.nonnegative"
    # the machine is generated from the toy's actions
    assert rows[("hypothesis", quirk)]["violation"]["invariant"] == "toy.nonnegative"
    assert rows[("hypothesis", "ideal")]["verdict"] == "pass"
    assert rows[("z3", quirk)]["verdict"] == "reproduced" and rows[("z3", "ideal")]["verdict"] == "pass"
    assert [c.kind for c in suite.matrix("toy", "both")] == ["ideal", "quirk"]


def test_an_operation_is_declared_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Issue 22: adding an operation to a component built on actions touches its model, its
    action class and its invariants — here ``reset`` on a variant of the toy, declared in this
    test alone — and every engine picks it up: the trace format, the explorer, Hypothesis, Z3
    and the API's workloads."""
    import attrs
    import z3

    from kvmodel.actions import Action
    from kvmodel.invariants import Invariant

    class ResettableCounter(toy_counter.Counter):  # the model
        def reset(self) -> int:
            self.value = 0
            return 0

    @attrs.frozen
    class Reset(Action):  # the action class
        op = "reset"

        def run(self, model: ResettableCounter) -> int:
            return model.reset()

        @classmethod
        def effect(cls, spec: Any, s: Any, p: Any) -> Any:
            return z3.BoolVal(True), {"v": z3.IntVal(0)}

    name = "toy_reset"
    zero = Invariant(  # the invariant
        "toy.reset_zeroes",
        name,
        "step",
        "After a reset the counter is zero.",
        lambda c: None if c.op != "reset" or c.error or c.model.value == 0 else f"reset left {c.model.value}",
    )
    rec = toy_counter.component(name, ResettableCounter, (*toy_counter.ACTIONS, Reset), (zero,))
    c = components.register(rec)
    try:
        sys_ = c.make_system({"limit": 2}, [])
        assert sys_.OPS == ("inc", "dec", "reset")
        sys_.step("inc", {})
        out = sys_.step("reset", {})
        assert out.result == 0 and not out.violations and sys_.key() == 0
        bad = sys_.step("reset", {"to": 3})
        assert type(bad.error).__name__ == "InvalidInput" and "to" in str(bad.error)
        # the explorer's world has the reset move, and reaches the same states
        rc, out_ = _run(["explore", "--component", name, "--ideal", "--json"], capsys)
        got = json.loads(out_)
        assert rc == 0 and got["coverage"]["reset"]["ok"] == got["states"] == 3
        # Z3: the spec's operations are the three actions', and the ideal model is proved
        spec = c.spec({"limit": 2}, [])  # type: ignore[misc]
        assert [o.name for o in spec.ts.operations] == ["inc", "dec", "reset"]
        rc, out_ = _run(["prove", "--component", name, "--json"], capsys)
        assert rc == 0, out_
        # Hypothesis: the world machine makes the reset move among the others
        from kvmodel import machines

        res = machines.run(name, config={"limit": 2}, max_examples=30, steps=10)
        assert res.violation is None and res.steps > 0
        assert [m.op for m in c.space().moves()] == ["inc", "dec", "reset"]  # type: ignore[misc]
    finally:
        components.unregister(name)


def test_toy_api_finds_an_implementation_that_goes_below_zero(toy: components.Component) -> None:
    class Wrapping:
        name = "wrapping"

        def reset(self, config: dict[str, Any]) -> None:
            self.v, self.limit = 0, config["limit"]

        def step(self, op: str, args: Any) -> dict[str, Any]:
            if op == "inc" and self.v >= self.limit:
                return {"error": "Full", "events": []}
            self.v += 1 if op == "inc" else -1
            return {"returns": self.v, "events": []}

    rep = check_implementation(Wrapping(), "toy", workloads=20, seed=1)
    assert not rep.ok and rep.divergence is not None and rep.divergence.op == "dec"
    assert check_implementation(Wrapping(), "toy", quirks="faithful", workloads=20, seed=1).ok


def test_every_package_is_declared_for_a_wheel_install() -> None:
    """pyproject lists packages explicitly: a new component package must be in the list."""
    import tomllib

    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(("kvmodel", *p.parent.relative_to(ROOT / "kvmodel").parts)).rstrip(".")
        for p in (ROOT / "kvmodel").rglob("__init__.py")
    }
    assert found <= declared, sorted(found - declared)


# ----------------------------------------------------------------------------- imports (issue 62)


def _import_graph() -> Any:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_installed_package_has_no_import_cycle() -> None:
    """No chain of imports, at module level or inside a function, leads from a module back to it."""
    g = _import_graph()
    edges, _ = g.graph(g.modules())
    assert len(edges) > 150 and sum(map(len, edges.values())) > 300
    assert g.cycles(edges) == []


def test_the_cycle_finder_sees_a_function_local_cycle_and_a_parent_package(tmp_path: Path) -> None:
    g = _import_graph()
    for folder in ("kvmodel/sub", "model", "invariants", "specs"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "kvmodel/__init__.py").write_text("")
    (tmp_path / "kvmodel/a.py").write_text("def f():\n    from kvmodel import b\n")
    (tmp_path / "kvmodel/b.py").write_text("from kvmodel.a import f\n")
    (tmp_path / "kvmodel/sub/__init__.py").write_text("from kvmodel import c\n")
    (tmp_path / "kvmodel/c.py").write_text("from kvmodel.sub.d import x\n")
    (tmp_path / "kvmodel/sub/d.py").write_text("x = 1\n")
    (tmp_path / "kvmodel/e.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kvmodel import a\n"
    )
    edges, local = g.graph(g.modules(tmp_path))
    assert g.cycles(edges) == [["kvmodel.a", "kvmodel.b"], ["kvmodel.c", "kvmodel.sub"]]
    assert local == 1 and "kvmodel.a" not in edges["kvmodel.e"]


def test_component_records_are_data() -> None:
    """A record names the parts it needs in other modules as "module:attr" references: no record
    imports inside a function (no loader closures), and every reference resolves."""
    for p in sorted((ROOT / "kvmodel" / "components").glob("*/__init__.py")):
        tree = ast.parse(p.read_text())
        local = [
            n.lineno
            for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.Lambda))
            for n in ast.walk(f)
            if isinstance(n, (ast.Import, ast.ImportFrom))
        ]
        assert local == [], f"{p.relative_to(ROOT)}: imports inside functions at lines {local}"
    refs = [
        v
        for c in components.registered()
        for v in [
            *(getattr(c, f.name) for f in attrs.fields(type(c))),
            *(getattr(t, f) for t in c.conform for f in ("available", "run", "describe")),
        ]
        if isinstance(v, components.Ref)
    ]
    assert len(refs) > 60
    for r in refs:
        assert r.get() is not None, r.path
