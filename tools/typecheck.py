"""Run mypy (strict) on the kvmodel package as it is installed.

The repository maps ``model/``, ``invariants/`` and ``specs/`` into the ``kvmodel``
namespace with ``package-dir``; mypy reads source folders, so this builds a temporary
tree of symbolic links in the installed layout, runs mypy there, and reports errors with
the repository's own paths. Exit status is mypy's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = {"model": "model", "invariants": "invariants", "specs": "specs"}


def link_installed_layout(into: Path) -> Path:
    """Lay ``kvmodel`` out in ``into`` as it is installed, as symbolic links into the repository
    (mypy reads it so); returns ``into``."""
    pkg = into / "kvmodel"
    pkg.mkdir(parents=True)
    for item in (ROOT / "kvmodel").iterdir():
        if item.name != "__pycache__":
            os.symlink(item, pkg / item.name)
    for sub, folder in MAP.items():
        os.symlink(ROOT / folder, pkg / sub)
    return into


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        link_installed_layout(Path(tmp))
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", "kvmodel"]
        r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        out = (r.stdout + r.stderr).replace("kvmodel/model/", "model/").replace("kvmodel/invariants/", "invariants/")
        out = out.replace("kvmodel/specs/", "specs/")
        sys.stdout.write(out)
        return r.returncode


if __name__ == "__main__":
    raise SystemExit(main())
