"""Same seed, same result — whatever else the process has imported or run before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kvmodel import determinism

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, sys
if sys.argv[1] == "after-router":
    from kvmodel.conformance import radix
    radix.run(radix.ModelRadixTree(), radix.ModelRadixTree(), workloads=20, seed=0)
    import kvmodel.specs.kv_manager, kvmodel.explorer  # more local modules loaded
if sys.argv[1] == "after-given":  # a plain @given test gathers local constants before any pin
    import kvmodel.specs.kv_manager, kvmodel.explorer, kvmodel.machines, kvmodel.specs.g1, kvmodel.specs.registry
    from hypothesis import given, settings, strategies as st
    settings(max_examples=300, database=None)(given(st.integers(), st.text())(lambda x, y: None))()
from kvmodel import machines
h = machines.run("kv_manager", config={"max_capacity": 2}, quirks=("promote_leaves_inactive_copy",),
                 target=("kv.active_inactive_disjoint",), max_examples=300)
sys.path.insert(0, "examples")
import my_kv_manager
from kvmodel import api
rep = api.check_implementation(my_kv_manager.MyAdapter("evict_most_recent"), "kv_manager", workloads=300)
print(json.dumps([h.examples, h.steps, h.violation, h.trace, rep.ops]))
"""


def _run(history: str) -> object:
    out = subprocess.run([sys.executable, "-c", SCRIPT, history], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_seeded_hypothesis_run_does_not_depend_on_import_history() -> None:
    fresh = _run("fresh")
    assert fresh == _run("after-router")
    assert fresh == _run("after-given")


def test_the_hypothesis_internal_we_pin_still_exists() -> None:
    assert determinism.pin() and determinism.pinned()
