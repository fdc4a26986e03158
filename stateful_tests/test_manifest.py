"""The manifest's Z3 entries (``specs/manifest.json``, ``engine`` prove / bmc) re-run: the same
verdict, every invariant's status and k for proofs, the same violated invariants at the same
minimal depth for BMC. (The explorer's entries are checked by ``test_explorer.py``.) Entries
that took more than 20 s to generate are left to ``tools/gen_manifest.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvmodel import components
from kvmodel.specs.runner import prove, run_bmc

from .test_cli import ROOT

MANIFEST = json.loads((ROOT / "specs" / "manifest.json").read_text())
PROVE = [e for e in MANIFEST["entries"] if e["engine"] == "prove" and e["seconds"] < 20]
BMC = [e for e in MANIFEST["entries"] if e["engine"] == "bmc" and e["seconds"] < 20]


def test_every_engine_and_every_component_with_a_spec_is_pinned() -> None:
    by_engine: dict[str, set[str]] = {}
    for e in MANIFEST["entries"]:
        by_engine.setdefault(e["engine"], set()).add(e["component"])
    with_spec = {c.name for c in components.registered() if c.spec is not None}
    assert MANIFEST["format"] == "kvmodel-manifest/2"
    assert by_engine["prove"] == with_spec and by_engine["bmc"] == with_spec
    assert by_engine["explore"] == {c.name for c in components.registered() if c.space is not None}


@pytest.mark.parametrize("entry", PROVE, ids=lambda e: e["name"])
def test_prove_entry(entry: dict[str, Any]) -> None:
    rep = prove(entry["component"], entry["universe"] or None, entry["quirks"], max_k=entry["max_k"])
    assert rep["verdict"] == entry["expect"]["verdict"]
    assert {r["invariant"]: [r["status"], r["k"]] for r in rep["invariants"]} == entry["expect"]["status"]


@pytest.mark.parametrize("entry", BMC, ids=lambda e: e["name"])
def test_bmc_entry(entry: dict[str, Any]) -> None:
    rep = run_bmc(
        entry["component"],
        entry["depth"],
        entry["universe"],
        entry["quirks"],
        properties=entry["properties"],
        induction=entry["induction"],
    )
    viol = {r["invariant"]: r["k"] for r in rep["invariants"] if r["status"] == "violated"}
    assert rep["verdict"] == entry["expect"]["verdict"] and viol == entry["expect"]["violations"]
