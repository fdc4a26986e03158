"""Pictures and reports for people: state graphs (Graphviz), the HTML report of a `kvmodel check`
run, progress lines, and the headless-Chromium check that the pages render."""

from __future__ import annotations

import html.parser
import io
import itertools
import json
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from kvmodel import cli, explorer, graphs, report, show, traces
from kvmodel.components.lru.space import LruSpace
from kvmodel.progress import Progress
from stateful_tests.conftest import require


def _lru_faithful(graph: bool = True) -> explorer.ExploreResult:
    return explorer.explore(
        {"cleanup_threshold": 2},
        ("equal_timestamp_stale_entry",),
        LruSpace("lru_evictor_wallclock", objects=2, max_queue=4),
        graph=graph,
    )


# ----------------------------------------------------------------------------- state graphs


def test_marked_paths_are_shortest_counterexamples_in_the_graph() -> None:
    r = _lru_faithful()
    g = r.graph
    assert set(g.graph["paths"]) == set(r.violations)
    for inv, path in g.graph["paths"].items():
        assert path[0] == 0 and len(path) - 1 == r.violations[inv]["depth"]
        assert all(g.has_edge(a, b) for a, b in itertools.pairwise(path))
        # shortest: no path from the root to the violating transition's source is shorter
        assert nx.shortest_path_length(g, 0, path[-2]) == len(path) - 2


def test_dot_marks_the_shallowest_counterexample_and_draws_a_tree_when_large(monkeypatch: Any) -> None:
    r = _lru_faithful()
    inv, path = graphs.marked_path(r.graph, None)
    assert inv is not None and len(path) - 1 == min(v["depth"] for v in r.violations.values())
    dot = graphs.to_dot(r.graph, title="t")
    red_edges = [ln for ln in dot.splitlines() if "->" in ln and "#dd3333" in ln]
    assert len(red_edges) == len(path) - 1
    assert f'label="{len(path) - 1}"' in dot  # the last state on the path is numbered
    assert "breadth-first tree" in dot  # 1,900 transitions: the spanning tree is drawn
    drawn = sum(1 for ln in dot.splitlines() if "->" in ln)
    assert drawn <= r.graph.number_of_nodes() - 1 + len(path)
    assert f"{graphs.MAX_DRAWN + 0} of {r.graph.number_of_nodes()} states drawn" in dot  # 454 states: trimmed
    assert graphs.to_dot(r.graph, title="t") == dot  # deterministic
    monkeypatch.setattr(graphs, "MAX_DRAWN", 10_000)
    full = graphs.to_dot(r.graph, title="t", tree=False)
    assert sum(1 for ln in full.splitlines() if "->" in ln) == r.graph.number_of_edges()


def test_marking_an_invariant_that_was_not_violated_is_a_clear_error() -> None:
    r = _lru_faithful()
    try:
        graphs.to_dot(r.graph, mark="lru.no_such")
    except graphs.GraphvizError as e:
        assert "lru.no_such" in str(e)
    else:
        raise AssertionError("no error")


def test_explore_svg_is_valid_svg_with_the_path_in_red(tmp_path: Path) -> None:
    require(shutil.which("dot") is not None, "Graphviz dot is not installed (apt-get install graphviz)")
    svg = tmp_path / "g.svg"
    rc = cli.main(
        [
            "explore",
            "--component",
            "lru_evictor_wallclock",
            "--objects",
            "2",
            "--max-queue",
            "4",
            "--cleanup-threshold",
            "2",
            "--quirk",
            "equal_timestamp_stale_entry",
            "--svg",
            str(svg),
            "--out",
            str(tmp_path),
            "--json",
        ]
    )
    assert rc == 1  # the quirk breaks invariants
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    ns = "{http://www.w3.org/2000/svg}"
    red_nodes = [
        g
        for g in root.iter(f"{ns}g")
        if g.get("class") == "node" and any(e.get("stroke") == "#dd3333" for e in g.iter(f"{ns}ellipse"))
    ]
    assert len(red_nodes) == 3  # root, one step, the violating state: a 2-step counterexample


# ----------------------------------------------------------------------------- check report


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "a":
            self.links.append(dict(attrs)["href"] or "")


def _run_check(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / "report" / "index.html"
    rc = cli.main(
        [
            "check",
            "--component",
            "lru_evictor_wallclock",
            "--engine",
            "explore",
            "--out",
            str(tmp_path / "traces"),
            "--html",
            str(out),
            "--itf",
        ]
    )
    assert rc == 0
    return out, {}


def test_check_report_links_a_page_for_every_counterexample(tmp_path: Path) -> None:
    out, _ = _run_check(tmp_path)
    p = _Links()
    p.feed(out.read_text())
    written = sorted(x for x in (tmp_path / "traces").glob("*.json") if not x.name.endswith(".itf.json"))
    assert written and len(p.links) == len(written)
    # each counterexample is also exported in ITF, read by itf-py
    import itf_py

    for w in written:
        itf = json.loads(w.with_suffix(".itf.json").read_text())
        assert len(itf_py.trace_from_json(itf).states) == len(traces.load(w)["steps"])
    for href in p.links:
        page = (out.parent / href).read_text()
        assert 'class="col violation"' in page
    assert "script" not in p.tags


def test_report_is_deterministic_and_marks_failures(tmp_path: Path) -> None:
    t = traces.record(
        "kv_manager", {"max_capacity": 2}, ["deref_ignores_unknown"], [("process", {"Deref": [{"F": 0}]})]
    )
    tp = traces.write(t, tmp_path / "t.json")
    row = {
        "component": "kv_manager",
        "engine": "hypothesis",
        "check": "ideal",
        "verdict": "FAIL",
        "steps": 1,
        "seconds": 0.5,
        "trace": str(tp),
        "violation": t["violation"],
    }
    summary = {"mode": "ideal", "engines": ["hypothesis"], "components": ["kv_manager"], "results": [row], "ok": False}
    a = report.write(summary, tmp_path / "a.html")
    text = (tmp_path / "a.html").read_text()
    assert 'class="bad"' in text and "0 of 1 checks" in text and len(a) == 1
    report.write(summary | {"results": [row | {"seconds": 9.9}]}, tmp_path / "a.html")
    assert (tmp_path / "a.html").read_text() == text  # seconds are not in the report


# ----------------------------------------------------------------------------- progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_writes_only_to_a_terminal_and_clears_its_line() -> None:
    tty, pipe = _Tty(), io.StringIO()
    for stream in (tty, pipe):
        with Progress("explore", stream=stream, interval=0) as bar:
            bar.update("10 states")
            bar.update("20 states")
    assert pipe.getvalue() == ""
    out = tty.getvalue()
    assert "\rexplore: 10 states" in out and "\rexplore: 20 states" in out and out.endswith("\r")


def test_cli_runs_are_quiet_on_stderr_when_not_a_terminal(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kvmodel.cli", "explore", "--component", "lru_evictor_counter", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == ""


# ----------------------------------------------------------------------------- the browser


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and raw RGB(A) rows of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and ctype in (2, 6)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 4 if ctype == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def test_headless_chromium_renders_the_report_and_the_highlighted_step(tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    require(chromium is not None, "Chromium is not installed (apt-get install chromium)")
    assert chromium is not None
    out, _ = _run_check(tmp_path)
    p = _Links()
    p.feed(out.read_text())
    page = (out.parent / p.links[0]).resolve()
    base = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert 'class="col violation"' in dom and "<svg" in dom
    for target, name in ((page, "page.png"), (out.resolve(), "report.png")):
        shot = tmp_path / name
        subprocess.run(
            [*base, "--window-size=1200,700", f"--screenshot={shot}", target.as_uri()],
            capture_output=True,
            timeout=120,
            check=True,
        )
        data = shot.read_bytes()
        w, h, rows = _png_pixels(data)
        assert (w, h) == (1200, 700) and len(data) > 10_000
        bpp = len(rows[0]) // w
        colours = {rows[y][x : x + 3] for y in range(0, h, 2) for x in range(0, w * bpp, bpp * 2)}
        assert len(colours) > 20  # text and boxes were drawn, not a blank page
        if name == "page.png":
            # the violating step's box is drawn in the highlight colours (#d33 stroke, #fff0f0 fill)
            assert bytes((0xFF, 0xF0, 0xF0)) in colours
            assert any(c[0] > 0xC0 and c[1] < 0x70 and c[2] < 0x70 for c in colours)


def test_headless_chromium_draws_the_pools_and_the_divergence(tmp_path: Path) -> None:
    """A divergence page: the model's and the implementation's observations side by side, the pools
    at every step with the named blocks outlined at the divergent step; rendered by Chromium."""
    import importlib.util

    from kvmodel import api

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    require(chromium is not None, "Chromium is not installed (apt-get install chromium)")
    assert chromium is not None
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("my_kv_manager_pic", root / "examples" / "my_kv_manager.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["my_kv_manager_pic"] = mod
    spec.loader.exec_module(mod)
    rep = api.check_implementation(mod.MyAdapter("evict_silently"), "kv_manager")
    assert rep.trace is not None and rep.divergence is not None
    step = rep.divergence.step
    path = tmp_path / "div.html"
    path.write_text(show.page(rep.trace))
    base = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*base, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert f'id="pool-{step}" class="pool-step marked"' in dom
    assert dom.count('class="pool-step') == len(rep.ops or [])
    assert 'id="divergence"' in dom and "events differ" in dom
    marked_block = dom.split(f'id="pool-{step}"', 1)[1].split('<div id="pool-', 1)[0]
    assert "cell active named" in marked_block  # a block the divergent Use names, outlined
    assert "cell free" in dom and "cell inactive" in dom and "cell view" in dom
    shot = tmp_path / "div.png"
    subprocess.run(
        [*base, "--window-size=1000,2400", f"--screenshot={shot}", path.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    w, h, rows = _png_pixels(shot.read_bytes())
    bpp = len(rows[0]) // w
    colours = {rows[y][x : x + 3] for y in range(0, h, 2) for x in range(0, w * bpp, bpp)}
    assert bytes((0x3A, 0x7B, 0xD5)) in colours  # active cells
    assert bytes((0xF0, 0xB4, 0x29)) in colours  # inactive cells
    assert bytes((0xDD, 0x33, 0x33)) in colours  # the named blocks' outline / the marked row


@pytest.mark.parametrize("component", ["kvbm_block_registry", "g1_native", "g1_kvbm", "lru_evictor_wallclock"])
def test_every_component_s_pools_are_drawn(component: str) -> None:
    from kvmodel import api, components

    ops = api._concrete(component, {}, [], list(range(1, 80, 3)), components.get(component).api_space())
    t = traces.record(component, {}, [], ops, origin={"engine": "test"}, stop_at_violation=False)
    page = show.page(t)
    assert page.count('class="pool-step') == len(ops)
    assert "cell active" in page or "cell inactive" in page
