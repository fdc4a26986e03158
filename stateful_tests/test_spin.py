"""SPIN on the Promela generated from the model stores exactly kvmodel's unreduced state
count plus its one pre-init state: the two encode the same machine.

SPIN (Debian ``spin``) is installed by ``.ci/run``; with KVMODEL_REQUIRE_REAL=1 its absence fails.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kvmodel import explorer, promela
from kvmodel.components.kv_manager.space import KvSpace

from .conftest import require


@pytest.mark.parametrize("capacity,n_full,partials", [(1, 2, 1), (2, 3, 1), (2, 2, 2), (3, 4, 1)])
def test_spin_counts_the_same_states(tmp_path: Path, capacity: int, n_full: int, partials: int) -> None:
    require(shutil.which("spin") is not None and shutil.which("gcc") is not None, "spin or gcc is not installed")
    space = KvSpace(n_full=n_full, partials=partials, max_batch=2, max_refcount=2)
    ours = explorer.explore({"max_capacity": capacity}, (), space, symmetry=False)
    (tmp_path / "m.pml").write_text(promela.generate(capacity, space))
    subprocess.run(["spin", "-a", "m.pml"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(
        ["gcc", "-O1", "-DNOREDUCE", "-DSAFETY", "-o", "pan", "pan.c"], cwd=tmp_path, check=True, capture_output=True
    )
    out = subprocess.run(["./pan", "-m100000", "-w18"], cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    stored = int(re.search(r"(\d+) states, stored", out).group(1))  # type: ignore[union-attr]
    assert "errors: 0" in out
    assert stored == ours.states + 1
