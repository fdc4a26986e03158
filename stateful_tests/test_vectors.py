"""Dynamo's own unit tests as vectors: the model passes them, and the runner is not vacuous.

Every expectation of every vector of the modelled components is perturbed in turn; each
perturbed vector must FAIL. That proves each asserted value is actually compared.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvmodel import cli, vectors

MINE = [
    "lru_evictor_wallclock",
    "lru_evictor_counter",
    "old_kv_manager",
    "old_active_sequence",
    "token_block_sequence",
    "kv_router_radix_tree",
    "kvbm_block_registry",
]


def test_modelled_components_pass(vectors_path: Path) -> None:
    results = vectors.run_file(vectors_path, MINE)
    assert len(results) >= 9
    bad = [r.line() for r in results if r.status != "PASS"]
    assert not bad, bad


def test_whole_file_has_no_fail(vectors_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["vectors", str(vectors_path)])
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == 0
    last = out[-1]
    passed, failed, skipped = (int(x.split()[0]) for x in last.split(", "))
    assert failed == 0 and passed >= 9 and passed + skipped == len(out) - 1
    assert all(line.startswith(("PASS ", "SKIP ")) for line in out[:-1])


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list) and obj and all(not isinstance(x, dict | list) for x in obj):
        yield path, obj
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    else:
        yield path, obj


def _perturb(v: Any) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if v is None:
        return 12345
    if isinstance(v, list):
        return [*v, 99999]
    if isinstance(v, str):
        return None  # prose and symbolic strings become a concrete wrong value
    return v


def _perturbations(vec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for si, step in enumerate(vec["steps"]):
        exp = step.get("expect") or {}
        for path, val in _leaves(exp):
            if path and path[-1] in ("note", "notes"):
                continue
            mutated = copy.deepcopy(vec)
            tgt = mutated["steps"][si]["expect"]
            for p in path[:-1]:
                tgt = tgt[p]
            tgt[path[-1]] = _perturb(val)
            yield f"step {si} expect {'/'.join(map(str, path))}", mutated


def _all_perturbations(path: Path) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for vec in vectors.load_file(path):
        if vec["component"] in MINE:
            for where, mutated in _perturbations(vec):
                out.append((vectors.vector_id(vec), where, mutated))
    return out


def test_every_expectation_is_checked(vectors_path: Path) -> None:
    cases = _all_perturbations(vectors_path)
    assert len(cases) > 40
    survivors = [f"{vid} {where}" for vid, where, m in cases if vectors.run_vector(m).status != "FAIL"]
    assert not survivors, survivors


def test_derived_values_are_checked_too(vectors_path: Path) -> None:
    """A wrong derived_not_asserted value (the LRU order after Deref) is a failure."""
    vec = next(v for v in vectors.load_file(vectors_path) if v.get("name") == "test_block_lifecycle_stringent")
    m = copy.deepcopy(vec)
    step = next(s for s in m["steps"] if "inactive_lru_order_oldest_first" in (s.get("derived_not_asserted") or {}))
    step["derived_not_asserted"]["inactive_lru_order_oldest_first"] = [2, 3]
    r = vectors.run_vector(m)
    assert r.status == "FAIL" and "inactive_lru_order_oldest_first" in r.message


def test_unknown_components_skip_and_unknown_keys_fail(tmp_path: Path) -> None:
    f = tmp_path / "v.json"
    f.write_text(
        json.dumps(
            {
                "vectors": [
                    {"component": "martian_pool", "name": "a", "steps": []},
                    {
                        "component": "lru_evictor_counter",
                        "name": "b",
                        "steps": [
                            {"op": "insert", "args": {"object": 1}},
                            {"op": "len", "expect": {"returns": 1, "flux_capacitance": 3}},
                        ],
                    },
                ]
            }
        )
    )
    res = {r.id: r for r in vectors.run_file(f)}
    assert res["martian_pool::a"].status == "SKIP"
    assert res["lru_evictor_counter::b"].status == "FAIL"
    assert "flux_capacitance" in res["lru_evictor_counter::b"].message


@pytest.mark.parametrize(
    "content,needle",
    [
        ("{not json", "not JSON"),
        ('{"vectors": 3}', "no top-level 'vectors' list"),
        ('{"vectors": [{"steps": []}]}', "vector #0"),
    ],
)
def test_malformed_files_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, needle: str
) -> None:
    f = tmp_path / "bad.json"
    f.write_text(content)
    assert cli.main(["vectors", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(f) in err and needle in err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["vectors", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert "nope.json" in err and "cannot read" in err and "Traceback" not in err


def test_a_null_event_manager_sends_no_message() -> None:
    """The registry's tests build it with ``MockEventManager`` (each publish and release is a
    message on the test's channel) or ``NullEventManager`` (events.rs: ``publish`` and
    ``block_release`` do nothing): the same drop is two messages under the one and none under
    the other; an event manager the harness does not know cannot be interpreted."""

    def vector(manager: str, messages: list[Any]) -> dict[str, Any]:
        return {
            "component": "kvbm_block_registry",
            "name": f"drop under {manager}",
            "source_version": "commit 403dd25973f55a6cea08d0b3157008af5",
            "constructor": {"event_manager": manager},
            "steps": [
                {"op": "create_publish_handle", "args": {"block": "blocks[0]", "as": "ph"}},
                {"op": "drop", "args": {"value": "ph"}, "expect": {"messages": messages}},
            ],
        }

    both = [["Register(H0)"], ["Remove(H0)"]]
    assert vectors.run_vector(vector("MockEventManager", both)).status == "PASS"
    assert vectors.run_vector(vector("MockEventManager", [])).status == "FAIL"
    assert vectors.run_vector(vector("NullEventManager", [])).status == "PASS"
    assert vectors.run_vector(vector("NullEventManager", both)).status == "FAIL"
    odd = vectors.run_vector(vector("NatsEventManager", []))
    assert odd.status == "FAIL" and "cannot interpret" in odd.message
