"""The adapter contracts (docs/contracts.md) are the code's: every operation of every system, the
arguments its decoder accepts (required and optional), every key the generator produces, and the
error tables; unknown argument keys are refused."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from kvmodel import api, components, contracts
from kvmodel.model.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[1]
NAMES = contracts.names()


def test_docs_contracts_md_is_generated_from_the_code() -> None:
    assert (ROOT / "docs" / "contracts.md").read_text() == contracts.markdown()


def test_every_component_with_a_workload_generator_has_a_contract() -> None:
    assert set(NAMES) == set(components.names(lambda c: c.api_world is not None))


@pytest.mark.parametrize("component", NAMES)
def test_the_documented_operations_are_the_systems(component: str) -> None:
    assert list(contracts.operations(component)) == list(api.operations(component)) or set(
        contracts.operations(component)
    ) == set(api.operations(component))


def _documented(component: str, op: str) -> tuple[set[str], set[str]]:
    args = contracts.operations(component)[op][0]
    return {k for k in args if not k.endswith("?")}, {k[:-1] for k in args if k.endswith("?")}


@pytest.mark.parametrize("component", ["g1_native", "g1_kvbm", "kvbm_block_registry"])
def test_documented_arguments_are_what_the_decoder_accepts(component: str) -> None:
    s = components.get(component).make_system({}, ())
    for op in contracts.operations(component):
        req, opt = _documented(component, op)
        cls = s.ACTIONS.by_op[op]  # type: ignore[attr-defined]
        if hasattr(cls, "REQUIRED"):  # the registry's actions name their keys
            assert req == set(cls.REQUIRED), op
            assert opt == set(cls.OPTIONAL), op
        else:
            spec = cls.ARGS
            assert req == {k for k, (r, _) in spec.items() if r} and opt == {k for k, (r, _) in spec.items() if not r}


@pytest.mark.parametrize("component", NAMES)
def test_an_unknown_argument_key_is_refused(component: str) -> None:
    s = components.get(component).make_system({}, ())
    for op in contracts.operations(component):
        args: dict[str, object] = {"salt_hash": 1}
        if op == "process":
            args = {"Promote": {"uuid": "p0", "hash": 1, "salt_hash": 1}}
        with pytest.raises(InvalidInput):
            s.decode(op, args)


@pytest.mark.parametrize("component", NAMES)
def test_every_generated_argument_is_documented(component: str) -> None:
    c = components.get(component)
    ops = api._concrete(component, {}, [], list(range(0, 4000, 7)), c.api_space())
    assert ops
    for op, args in ops:
        if op == "process":
            continue  # its argument is the MoveBlock variant itself
        req, opt = _documented(component, op)
        assert req <= set(args) <= req | opt, (op, args)


@pytest.mark.parametrize("component", NAMES)
def test_error_tables_hold_the_ids_of_their_types(component: str) -> None:
    table = api.error_names(component)
    assert table["InvalidInput"] == "invalid input"
    assert all(isinstance(k, str) and isinstance(v, str) and v for k, v in table.items())


@pytest.mark.parametrize(
    ("shape", "good", "bad"),
    [
        ('Ready(n) | "CapacityExhausted"', ["Ready(0)", "Ready(12)", "CapacityExhausted"], ["Ready", "Ready(-1)", 1]),
        ('"Ready" | "CapacityExhausted"', ["Ready"], ["Ready(1)", None]),
        ("usize", [0, 2**63], [True, -1, 2.0, "1", 2**64]),
        ("{a: usize, b: boolean}", [{"a": 1, "b": False}], [{"a": 1}, {"a": 1, "b": 0}, {"a": 1, "b": True, "c": 1}]),
        ("[u32] | null", [[], [1, 2], None], [[2**32], [None], {}]),
        ("name | null", ["x", None], ["", 0]),
    ],
)
def test_return_shapes_accept_exactly_their_values(shape: str, good: list[Any], bad: list[Any]) -> None:
    assert all(contracts.conforms(shape, v) for v in good)
    assert not any(contracts.conforms(shape, v) for v in bad)


@pytest.mark.parametrize("component", NAMES)
def test_documented_returns_are_the_models_on_generated_runs(component: str) -> None:
    """Issue 58: every operation's documented return shape holds for every answer the model gives
    on generated workloads (ideal and faithful), and every operation answers in them. Issue 62:
    the shapes are the action classes' own ``RETURNS``, so the contract cannot drift from the
    model (the KVBM ``reserve_destination`` once promised ``uncached_prompt_tokens``)."""
    from kvmodel.model.quirks import faithful

    shapes = contracts.shapes(component)
    assert set(shapes) == set(contracts.operations(component))
    sp = components.get(component).api_space()
    seen: set[str] = set()
    for seed in range(25):
        rnd = random.Random(seed)
        picks = [rnd.getrandbits(16) for _ in range(40)]
        for quirks in ([], sorted(faithful(component))):
            s = sp.system({}, quirks)
            for op, args in api._concrete(component, {}, quirks, picks, sp):
                obs = s.step(op, args).observation(None)
                if "returns" in obs:
                    value = json.loads(json.dumps(obs["returns"]))
                    assert contracts.conforms(shapes[op], value), (op, args, value, shapes[op])
                    seen.add(op)
    assert seen == set(shapes), sorted(set(shapes) - seen)


@pytest.mark.parametrize("component", NAMES)
def test_documented_arguments_are_the_ones_the_model_decodes(component: str) -> None:
    """Issue 62: an operation's documented arguments are its action's declaration: the keys of
    ``ARGS``, ``?`` on exactly the optional ones; for an action that checks its arguments itself
    (the registry's), exactly its ``REQUIRED`` and ``OPTIONAL`` keys. Every one has a type."""
    sys_ = components.get(component).make_system({}, ())
    for op, (args, means) in contracts.operations(component).items():
        cls = sys_.ACTIONS.by_op[op]  # type: ignore[attr-defined]
        assert means and all(args.values()), op
        if cls.ARGS:
            assert args == {(k if req else f"{k}?"): args[k if req else f"{k}?"] for k, (req, _) in cls.ARGS.items()}
        elif hasattr(cls, "REQUIRED"):
            assert {k for k in args if not k.endswith("?")} == set(cls.REQUIRED), op
            assert {k[:-1] for k in args if k.endswith("?")} == set(cls.OPTIONAL), op


@pytest.mark.parametrize("component", ["g1_native", "g1_kvbm"])
def test_the_g1_contracts_state_encodings_semantics_preconditions_and_the_state_after_a_panic(component: str) -> None:
    text = "\n".join(contracts.notes(component))
    for needle in ('"Ready(2)"', "event_id", "tokens_hash", "After a panic", "process_for_request"):
        assert needle in text, needle
    pre = contracts.preconditions(component)
    assert {"allocate", "push", "free", "release_decode"} <= set(pre)
    assert all(doc for doc in pre.values())
    md = contracts.markdown()
    assert "NativePanic" in md and "KvbmPanic" in md
