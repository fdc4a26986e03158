"""The mutation benchmark: the catalogue's edits apply and are undone, and every mutant is killed
by the engines `kvmodel check` runs (Hypothesis and the explorer)."""

from __future__ import annotations

import json

import pytest

from kvmodel import cli
from kvmodel.model.kv_manager import KvManager
from kvmodel.model.registry import RegistryWorld
from kvmodel.mutants import Mutant, MutantError, applied
from kvmodel.mutants.catalogue import MUTANTS

from .conftest import require


def test_catalogue_is_large_named_and_spread_over_components() -> None:
    assert len(MUTANTS) >= 30
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    assert {m.component for m in MUTANTS} >= {
        "kv_manager",
        "lru_evictor_wallclock",
        "lru_evictor_counter",
        "kvbm_block_registry",
    }


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_each_edit_applies_and_is_undone(mutant: Mutant) -> None:
    before = {k: v for k, v in vars(KvManager).items()} | {k: v for k, v in vars(RegistryWorld).items()}
    with applied(mutant):
        pass
    after = {k: v for k, v in vars(KvManager).items()} | {k: v for k, v in vars(RegistryWorld).items()}
    assert before == after


def test_an_edit_that_does_not_apply_is_an_error() -> None:
    bad = Mutant("nope", "kv_manager", "kvmodel.model.kv_manager", "this text is not there", "", "")
    with pytest.raises(MutantError, match="0 times"):
        with applied(bad):
            pass


def test_a_mutant_really_changes_the_running_model() -> None:
    m = next(x for x in MUTANTS if x.name == "kv_capacity_off_by_one")
    from kvmodel.model.blocks import FullBlock, Use

    def fill() -> bool:
        km = KvManager(1, quirks=())
        return km.process(Use((FullBlock(0), FullBlock(1))))

    assert fill() is False
    with applied(m):
        assert fill() is True
    assert fill() is False


def test_every_mutant_is_killed_by_the_default_check_engines(capsys: pytest.CaptureFixture[str]) -> None:
    from kvmodel.conformance import radix

    why = radix.real_available()
    require(why is None, f"the router mutants need the real RadixTree: {why}")
    rc = cli.main(["mutants", "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 0
    sm = rep["summary"]
    assert sm["mutants"] == len(MUTANTS) and sm["killed"] == len(MUTANTS) == sm["killed_by_default_check"]
    for row in rep["mutants"]:
        ex = row["engines"]["explore"]
        hy = row["engines"]["hypothesis"]
        if row["component"] == "kv_router_radix_tree":
            assert row["engines"]["conform"]["killed"], row["name"]
            continue
        # the explorer's first violation is the BFS minimum; Hypothesis's world contains the explorer's
        if ex["killed"] and hy["killed"] and "length" in hy and row["bfs_minimum"]:
            assert hy["length"] <= 2 * row["bfs_minimum"], row["name"]


def test_unknown_mutant_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["mutants", "--only", "no_such_mutant"]) == 2
    assert "unknown mutant" in capsys.readouterr().err
