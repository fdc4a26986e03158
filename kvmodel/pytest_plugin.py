"""The pytest plugin (entry point ``pytest11: kvmodel``): check your implementation in a test.

Installed with kvmodel, it gives every test suite a ``kvmodel_check`` fixture::

    def test_my_pool_matches_the_model(kvmodel_check):
        kvmodel_check(MyAdapter(), "kv_manager")

It runs :func:`kvmodel.api.check_implementation`; on a divergence the test fails with the
shrunk counterexample drawn step by step, and the trace is written (for ``kvmodel show``
and ``kvmodel replay``) under ``--kvmodel-traces`` (default: the test's ``tmp_path``).
Options: ``--kvmodel-workloads N`` (default 200) and ``--kvmodel-seed S`` (default 0).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kvmodel.api import DiffReport, check_implementation


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("kvmodel", "differential checks against the kvmodel models")
    g.addoption("--kvmodel-workloads", type=int, default=200, help="generated workloads per check (default 200)")
    g.addoption("--kvmodel-seed", type=int, default=0, help="seed of the generated workloads (default 0)")
    g.addoption("--kvmodel-traces", default=None, help="where counterexample traces go (default: tmp_path)")


@pytest.fixture
def kvmodel_check(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., DiffReport]:
    """``kvmodel_check(adapter, component=None, **options) -> DiffReport`` (``None``: the mocker's KV
    manager); fails the test on a divergence."""
    cfg = request.config

    def check(adapter: Any, component: str | None = None, **options: Any) -> DiffReport:
        options.setdefault("workloads", cfg.getoption("kvmodel_workloads"))
        options.setdefault("seed", cfg.getoption("kvmodel_seed"))
        rep = check_implementation(adapter, component, **options)
        if not rep.ok:
            where = Path(cfg.getoption("kvmodel_traces") or tmp_path)
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node.name)
            path = rep.write_trace(where / f"{name}.json")
            pytest.fail(
                f"{rep.explain()}\ncounterexample trace: {path} (kvmodel show {path} --html page.html draws it)",
                pytrace=False,
            )
        if rep.verdict != "pass":  # nothing was compared: not a pass
            pytest.fail(f"{rep.implementation}: no step ran in {rep.workloads} workloads", pytrace=False)
        return rep

    return check
