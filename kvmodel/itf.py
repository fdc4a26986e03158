"""Traces in the ITF format (Apalache/Quint, ADR-015), alongside our own format.

One ITF state per trace step, with the variables ``step``, ``op``, ``args``,
``outcome`` (a record ``{kind: "returns" | "error", value}``), ``events`` and, when the
trace recorded it, ``state`` (the model's snapshot after the step). JSON values map to
ITF values: integers outside the ±2^53 range (sequence hashes are u64) as
``{"#bigint": "..."}``, lists as sequences, objects as records, ``null`` as the variant
``{"tag": "Null", "value": "U_OF_UNIT"}``. ``#meta`` carries the component, the quirks
and the violation. The ``itf-py`` package reads the result (tested).
"""

from __future__ import annotations

from typing import Any

SAFE = 2**53

# A unit-valued variant, as Apalache writes unit. Tagged "Null", not "None": itf-py turns a
# variant tag into a namedtuple, and "None" is a Python keyword.
NONE = {"tag": "Null", "value": "U_OF_UNIT"}


def value(v: Any) -> Any:
    if v is None:
        return NONE
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v if -SAFE < v < SAFE else {"#bigint": str(v)}
    if isinstance(v, float):
        return {"#bigint": str(int(v))} if v.is_integer() else str(v)
    if isinstance(v, list | tuple):
        return [value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): value(x) for k, x in v.items()}
    return str(v)


VARS = ("step", "op", "args", "outcome", "events", "state")


def from_trace(trace: dict[str, Any]) -> dict[str, Any]:
    """The ITF document for one of our traces."""
    states = []
    for i, step in enumerate(trace["steps"]):
        obs = step.get("observe") or {}
        if "error" in obs:
            outcome = {"kind": "error", "value": value(obs["error"])}
        else:
            outcome = {"kind": "returns", "value": value(obs.get("returns"))}
        st: dict[str, Any] = {
            "#meta": {"index": i},
            "step": i,
            "op": step["op"],
            "args": value(step.get("args")),
            "outcome": outcome,
            "events": value(obs.get("events", [])),
            "state": value(obs.get("state", {})),
        }
        states.append(st)
    v = trace.get("violation")
    return {
        "#meta": {
            "format": "ITF",
            "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "source": f"kvmodel {trace.get('format', '')} trace of {trace['component']}",
            "description": (
                f"violates {v['invariant']} at step {v['step']}: {v.get('message', '')}" if v else "no violation"
            ),
            "component": trace["component"],
            "quirks": list(trace.get("quirks", [])),
        },
        "vars": list(VARS),
        "states": states,
    }
