"""`kvmodel show`: a trace as a terminal timeline and a self-contained HTML page."""

from __future__ import annotations

import html.parser
from pathlib import Path

import pytest

from kvmodel import cli, explorer, show, traces
from kvmodel.components.kv_manager.space import KvSpace


def _trace() -> dict:  # type: ignore[type-arg]
    r = explorer.explore({"max_capacity": 2}, ("promote_leaves_inactive_copy",), KvSpace(3, 1, 2, 2))
    return explorer.violation_trace(r, "kv.active_inactive_disjoint")


class _Collect(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_page_is_self_contained_and_highlights_the_violating_step() -> None:
    t = _trace()
    page = show.page(t)
    p = _Collect()
    p.feed(page)
    tags = [tag for tag, _ in p.tags]
    assert "svg" in tags and "script" not in tags and "link" not in tags
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    last = len(t["steps"]) - 1
    bad = [a for tag, a in p.tags if tag == "g" and "violation" in (a.get("class") or "")]
    assert [a["id"] for a in bad] == [f"step-{last}"]
    assert "kv.active_inactive_disjoint" in page
    assert show.page(t) == page  # deterministic


def test_terminal_rendering_names_each_step_and_the_violation() -> None:
    t = _trace()
    out = show.terminal(t)
    assert out.count("\n") >= len(t["steps"])
    assert "✗ kv.active_inactive_disjoint" in out and "inactive (LRU first): F" in out


def test_cli_show_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "t.json"
    traces.write(_trace(), p)
    assert cli.main(["show", str(p), "--html", str(tmp_path / "t.html")]) == 0
    assert "✗" in capsys.readouterr().out and (tmp_path / "t.html").read_text().startswith("<!DOCTYPE html>")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert cli.main(["show", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.json" in err


def test_kv_pages_show_the_router_view_from_the_events() -> None:
    # Stored then Removed by eviction: the router view follows the stream, parent included
    steps = [
        ("process", {"Use": [{"F": 0}, {"F": 1}]}),
        ("process", {"Destroy": [{"F": 1}]}),
    ]
    t = traces.record("kv_manager", {"max_capacity": 2}, [], steps)
    out = show.terminal(t)
    lines = [x.strip() for x in out.splitlines() if "router view" in x]
    assert lines == ["router view: 0, 1←0", "router view: 0"]


@pytest.mark.parametrize(
    ("damaged", "view"), [([None, False], "—"), ([True, 1, "2"], "1"), ([[0], 3], "3"), ([None, 5, 4], "4←5, 5")]
)
def test_a_recorded_store_naming_no_hashes_is_drawn_without_them(damaged: list[object], view: str) -> None:
    """A damaged recorded event (Store blocks that are no hashes, beside hashes) is drawn: the
    router view keeps the integers and leaves the rest out, in the terminal and on the page (it
    ordered them all, and None against a number raised)."""
    t = traces.record("kv_manager", {"max_capacity": 2}, [], [("process", {"Use": [{"F": 0}]})])
    t["steps"][0]["observe"]["events"] = [{"Store": {"blocks": damaged, "parent_hash": None}}]
    out = show.terminal(t)
    assert [x.strip() for x in out.splitlines() if "router view" in x] == [f"router view: {view}"]
    assert show.page(t).startswith("<!DOCTYPE html>")


def test_g1_pages_show_copies_tables_and_events() -> None:
    steps = [
        ("new_request", {"owner": 0, "tokens": [1, 2, 5]}),
        ("allocate", {"owner": 0, "reuse": False}),
        ("push", {"owner": 0, "token": 6}),
        ("finalize", {"owner": 0}),
    ]
    t = traces.record("g1_native", {"max_capacity": 3}, ["promote_tail_before_finalize"], steps)
    out = show.terminal(t)
    assert "tables: r0: #" in out and "P:r0.u0" in out and "copies: c0:private, c1:private" in out
    assert out.count("Stored([#") == 2 and "✗ g1.stored_parent_announced" in out
