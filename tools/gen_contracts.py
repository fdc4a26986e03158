"""Write docs/contracts.md from kvmodel.contracts (the adapter contract of every component)."""

from __future__ import annotations

from pathlib import Path

from kvmodel import contracts, jsonio

if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "docs" / "contracts.md"
    jsonio.write_text(out, contracts.markdown())
    print(f"wrote {out}")
