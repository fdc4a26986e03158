"""Same seed, same result — whatever else the process has imported or run before."""

from __future__ import annotations

import json
import subprocess
import sys

from kvmodel import determinism

SCRIPT = """
import json, sys
if sys.argv[1] == "after-router":
    from kvmodel.conformance import radix
    radix.run(radix.ModelRadixTree(), radix.ModelRadixTree(), workloads=20, seed=0)
    import kvmodel.specs.kv_manager, kvmodel.explorer  # more local modules loaded
from kvmodel import machines
h = machines.run("kv_manager", config={"max_capacity": 2}, quirks=("promote_leaves_inactive_copy",),
                 target=("kv.active_inactive_disjoint",), max_examples=300)
print(json.dumps([h.examples, h.steps, h.violation, h.trace]))
"""


def _run(history: str) -> object:
    out = subprocess.run([sys.executable, "-c", SCRIPT, history], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_seeded_hypothesis_run_does_not_depend_on_import_history() -> None:
    assert _run("fresh") == _run("after-router")


def test_the_hypothesis_internal_we_pin_still_exists() -> None:
    assert determinism.pin() and determinism.pinned()
