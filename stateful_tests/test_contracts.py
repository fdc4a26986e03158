"""The adapter contracts (docs/contracts.md) are the code's: every operation of every system, the
arguments its decoder accepts (required and optional), every key the generator produces, and the
error tables; unknown argument keys are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvmodel import api, components, contracts
from kvmodel.model.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[1]
NAMES = contracts.names()


def test_docs_contracts_md_is_generated_from_the_code() -> None:
    assert (ROOT / "docs" / "contracts.md").read_text() == contracts.markdown()


def test_every_component_with_a_workload_generator_has_a_contract() -> None:
    assert set(NAMES) == set(components.names(lambda c: c.api_space))


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
