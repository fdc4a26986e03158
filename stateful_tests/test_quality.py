"""ruff and mypy (strict) are part of the suite: a lint or type error fails CI."""

from __future__ import annotations

import subprocess
import sys

from .test_cli import ROOT


def test_ruff_check_and_format() -> None:
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_strict() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "typecheck.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
