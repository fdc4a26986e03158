"""Every counterexample printed in docs/findings.md still breaks its invariant at its last step,
and no shorter prefix does (the document cannot drift from the model)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kvmodel import traces
from kvmodel.model.quirks import QUIRKS

from .test_cli import ROOT

DOC = (ROOT / "docs" / "findings.md").read_text()
FINDINGS: list[dict[str, Any]] = [json.loads(b) for b in re.findall(r"```json\n(.*?)\n```", DOC, re.S)]


def test_every_quirk_has_a_finding() -> None:
    named = {q for f in FINDINGS for q in f["quirks"]}
    assert set(QUIRKS) <= named


@pytest.mark.parametrize("finding", FINDINGS, ids=lambda f: "+".join(f["quirks"]))
def test_finding_reproduces(finding: dict[str, Any]) -> None:
    ops = [(s["op"], s["args"]) for s in finding["steps"]]
    t = traces.record(finding["component"], finding["config"], finding["quirks"], ops, target=[finding["invariant"]])
    assert t["violation"] is not None and t["violation"]["step"] == len(ops) - 1
    ideal = traces.record(finding["component"], finding["config"], [], ops, target=[finding["invariant"]])
    assert ideal["violation"] is None, "the same steps must be clean on the ideal model"
