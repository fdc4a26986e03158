"""Shared fixtures: where ``shared/`` is, Hypothesis profiles, and the real-parts switch.

``KVMODEL_REQUIRE_REAL=1`` (set by ``.ci/run``) turns every "real part missing" skip
into a failure, so CI cannot pass by skipping the conformance tests.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from kvmodel.profiles import register_hypothesis_profiles

# The Rust runtime of ai-dynamo-runtime logs INFO lines to stderr unless told otherwise.
os.environ.setdefault("DYN_LOG", "error")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KVMODEL_SHARED", ROOT.parent / "shared"))
# The clone carries its own copy of the shared vectors (a test keeps it equal to shared/).
VECTORS = ROOT / "stateful_tests" / "vectors" / "dynamo-test-vectors.json"
REQUIRE_REAL = os.environ.get("KVMODEL_REQUIRE_REAL") == "1"

register_hypothesis_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def require(condition: bool, why: str) -> None:
    """Skip when a real part is missing, or fail when KVMODEL_REQUIRE_REAL=1."""
    if condition:
        return
    if REQUIRE_REAL:
        pytest.fail(f"{why} (KVMODEL_REQUIRE_REAL=1: missing real parts fail instead of skipping)")
    pytest.skip(why)


@pytest.fixture(scope="session")
def vectors_path() -> Path:
    require(VECTORS.exists(), f"the shared vectors file is not at {VECTORS}")
    return VECTORS
