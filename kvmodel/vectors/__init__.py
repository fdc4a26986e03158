"""Run test vectors in the ``dynamo-kv-test-vectors/1`` format against the model.

Each vector names a component, a constructor and steps; a step has an ``op``, ``args``,
``expect`` (what the Rust test asserts, exactly) and ``derived_not_asserted`` (what the
semantics implies and a faithful model must also produce). Both are checked. The notation is
implemented once (:mod:`kvmodel.vectors.notation`, :mod:`kvmodel.vectors.harness`); each
component's harness says what its operations do and what is observable (``docs/vectors.md``).
A vector runs on the revision its ``source_version`` names (the seed's by default), or on the
one the caller chooses.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from kvmodel.model.errors import ModelError
from kvmodel.model.quirks import default_revision, faithful, revision
from kvmodel.vectors import harness as _harness
from kvmodel.vectors.harness import Harness
from kvmodel.vectors.notation import Mismatch, Uninterpretable, revision_for

__all__ = [
    "HARNESSES",
    "Mismatch",
    "Uninterpretable",
    "VectorFileError",
    "VectorResult",
    "load_file",
    "run_file",
    "run_vector",
    "vector_id",
]


def harnesses() -> dict[str, type[Harness]]:
    """Every vector component's harness, from the components' declarations (registry order)."""
    from kvmodel import components

    return {h.component: h for c in components.registered() for h in c.harnesses()}


def __getattr__(name: str) -> Any:
    if name == "HARNESSES":
        return harnesses()
    raise AttributeError(name)


class VectorFileError(Exception):
    """A vectors file that cannot be read; one line naming the file and the problem."""


@attrs.define
class VectorResult:
    id: str
    component: str
    status: str  # PASS, FAIL or SKIP
    message: str = ""
    revision: str | None = None

    def line(self) -> str:
        return f"{self.status} {self.id}" + (f": {self.message}" if self.message else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "component": self.component,
            "status": self.status,
            "message": self.message,
            "revision": self.revision,
        }


def load_file(path: str | Path) -> list[dict[str, Any]]:
    from kvmodel.jsonio import read_json

    p = Path(path)
    data = read_json(p, VectorFileError)
    vectors = data.get("vectors") if isinstance(data, dict) else None
    if not isinstance(vectors, list):
        raise VectorFileError(f"{p}: not a vectors file: no top-level 'vectors' list")
    for i, v in enumerate(vectors):
        if not isinstance(v, dict) or not isinstance(v.get("component"), str) or not isinstance(v.get("steps"), list):
            raise VectorFileError(f"{p}: vector #{i} needs a 'component' string and a 'steps' list")
        for k in ("constructor", "derived_not_asserted"):
            if v.get(k) is not None and not isinstance(v[k], dict):
                raise VectorFileError(f"{p}: vector #{i}: {k!r} must be an object")
        for si, s in enumerate(v["steps"]):
            if not isinstance(s, dict):
                raise VectorFileError(f"{p}: vector #{i} step {si} is not an object")
            for k in ("args", "expect", "derived_not_asserted"):
                if s.get(k) is not None and not isinstance(s[k], dict):
                    raise VectorFileError(f"{p}: vector #{i} step {si}: {k!r} must be an object")
    return vectors


def vector_id(v: dict[str, Any]) -> str:
    return str(v.get("id") or f"{v['component']}::{v.get('name', '?')}")


def quirks_for(v: dict[str, Any], rev: str | None = None) -> tuple[str | None, frozenset[str]]:
    """The revision a vector runs on (``rev``, else the one its ``source_version`` names, else
    the seed's) and that revision's quirks."""
    h = harnesses()[v["component"]]
    comp = h.model_component
    if rev is None:
        d = default_revision(comp)
        rev = revision_for(str(v.get("source_version", "")), h.revisions, None if d is None else d.name)
    if rev is None:
        return None, faithful(comp)
    return rev, revision(comp, rev).quirks


def run_vector(
    v: dict[str, Any], *, revision_name: str | None = None, quirks: Iterable[str] | None = None
) -> VectorResult:
    """Run one vector; ``quirks`` overrides the revision's quirk set (a test's what-if)."""
    vid, comp = vector_id(v), v["component"]
    h = harnesses().get(comp)
    if h is None:
        return VectorResult(vid, comp, "SKIP", f"component {comp!r} is not modelled")
    try:
        rev, qs = quirks_for(v, revision_name)
    except ValueError as e:
        return VectorResult(vid, comp, "FAIL", str(e))
    if quirks is not None:
        qs = frozenset(quirks)
    try:
        _harness.run(h(v, qs), v)
    except Mismatch as e:
        return VectorResult(vid, comp, "FAIL", str(e), rev)
    except Uninterpretable as e:
        return VectorResult(vid, comp, "FAIL", f"cannot interpret: {e}", rev)
    except ModelError as e:
        return VectorResult(vid, comp, "FAIL", f"the constructor was rejected: {e}", rev)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        return VectorResult(vid, comp, "FAIL", f"bad vector input: {type(e).__name__}: {e}", rev)
    except RecursionError:
        return VectorResult(vid, comp, "FAIL", "bad vector input: nested too deeply", rev)
    return VectorResult(vid, comp, "PASS", "", rev)


def run_file(
    path: str | Path, components: Iterable[str] | None = None, *, revision_name: str | None = None
) -> list[VectorResult]:
    wanted = set(components or [])
    return [
        run_vector(v, revision_name=revision_name) for v in load_file(path) if not wanted or v["component"] in wanted
    ]


def report(file: str, results: list[VectorResult]) -> tuple[dict[str, Any], list[str]]:
    """``kvmodel vectors``: the results as JSON and text; the verdict is ``violation`` for a
    failure, ``pass`` when something passed and nothing failed, ``inconclusive`` when nothing ran."""
    counts = {s: sum(1 for r in results if r.status == s) for s in ("PASS", "FAIL", "SKIP")}
    verdict = "violation" if counts["FAIL"] else "pass" if counts["PASS"] else "inconclusive"
    out = {
        "file": file,
        "results": [r.to_json() for r in results],
        "passed": counts["PASS"],
        "failed": counts["FAIL"],
        "skipped": counts["SKIP"],
        "verdict": verdict,
    }
    lines = [r.line() for r in results]
    lines.append(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return out, lines
