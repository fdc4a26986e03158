"""Command-line argument checking: bounded numbers, output paths, one-line errors.

Every numeric option has a documented range (a world that cannot fit is refused up front,
with the limit in the message); every output path is checked before any work starts (an
existing directory where a file is wanted, a path under a file, an unwritable place); argparse's
own errors are one line (usage belongs to ``--help``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn


class UsageError(Exception):
    """A bad command line: one line naming the option and the problem (exit 2)."""


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def integer_or_auto(lo: int, hi: int, auto: Callable[[], int]) -> Callable[[str], int]:
    """An argparse type: an integer from ``lo`` to ``hi``, or ``auto`` for ``auto()`` (clamped
    to the range)."""
    number = integer(lo, hi)

    def parse(text: str) -> int:
        if text.strip() == "auto":
            return max(lo, min(hi, auto()))
        return number(text)

    parse.__name__ = f"integer from {lo} to {hi} or 'auto'"
    return parse


def integer(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``lo`` to ``hi``."""

    def parse(text: str) -> int:
        try:
            v = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{v} is out of range: it must be from {lo} to {hi}")
        return v

    parse.__name__ = f"integer from {lo} to {hi}"
    return parse


def memory_size(text: str) -> int | None:
    """An argparse type: ``--max-memory``'s size (``kvmodel.membound.parse_size``)."""
    from kvmodel.membound import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


memory_size.__name__ = "size"


def seconds(lo: float = 0.001, hi: float = 86_400.0) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds from ``lo`` (the solver's resolution is a
    millisecond) to ``hi``."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(v) or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{text} must be a finite number of seconds from {lo} to {hi:g}")
        return v

    parse.__name__ = "seconds"
    return parse


def nonempty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


SEED = integer(-(2**63), 2**63 - 1)


def check_out_file(path: str | None, option: str) -> None:
    """``path`` can be written as a file: not a directory, not under a file, in a writable place."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{option} {path}: is a directory, not a file")
    parent = _existing_ancestor(p.parent)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"{option} {path}: {parent} is a file, not a directory")
    if parent is not None and not os.access(parent, os.W_OK):
        raise UsageError(f"{option} {path}: {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{option} {path}: not writable")


def check_out_dir(path: str | None, option: str) -> None:
    """``path`` is, or can be made, a writable directory."""
    if path is None:
        return
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {path}: is a file, not a directory")
    base = _existing_ancestor(p)
    if base is not None and not base.is_dir():
        raise UsageError(f"{option} {path}: {base} is a file, not a directory")
    if base is not None and not os.access(base, os.W_OK):
        raise UsageError(f"{option} {path}: {base} is not writable")


def _existing_ancestor(p: Path) -> Path | None:
    cur = p if str(p) else Path(".")
    for _ in range(256):
        if cur.exists():
            return cur
        if cur.parent == cur:
            return None
        cur = cur.parent
    return None


def check_outputs(args: argparse.Namespace, files: tuple[str, ...], dirs: tuple[str, ...] = ("out",)) -> None:
    """Check the output options of ``args`` that are set (names as in argparse's ``dest``)."""
    for name in files:
        v = getattr(args, name, None)
        if isinstance(v, str):
            check_out_file(v, "--" + name.replace("_", "-"))
    for name in dirs:
        v = getattr(args, name, None)
        if isinstance(v, str):
            check_out_dir(v, "--" + name.replace("_", "-"))


def add_component_options(parser: argparse.ArgumentParser, command: str) -> None:
    """The options every component declares for ``command`` (``explore`` or ``spec``), merged:
    one flag per name, its help naming each component's meaning and range. Values are checked
    per component once the component is known (:func:`component_values`)."""
    from kvmodel import components

    merged: dict[str, list[tuple[str, Any]]] = {}
    for c in components.registered():
        for o in c.options_for(command):
            merged.setdefault(o.name, []).append((c.name, o))
    for name, decls in merged.items():
        kinds = {o.kind for _, o in decls}
        if len(kinds) != 1:
            raise ValueError(f"option --{name} is declared with different kinds: {sorted(kinds)}")
        (kind,) = kinds
        helptext = "; ".join(f"{c}: {o.describe()}" for c, o in decls)
        flag = decls[0][1].flag
        if kind == "flag":
            parser.add_argument(flag, action="store_true", default=None, help=helptext)
        elif kind == "choice":
            choices = sorted({ch for _, o in decls for ch in o.choices})
            parser.add_argument(flag, choices=choices, help=helptext)
        else:
            lo, hi = min(o.lo for _, o in decls), max(o.hi for _, o in decls)
            parser.add_argument(flag, type=integer(lo, hi), metavar="N", help=helptext)


def component_values(args: argparse.Namespace, component: Any, command: str) -> dict[str, Any]:
    """The values the user gave for ``component``'s options of ``command``, checked against the
    component's own ranges; an option of another component is a usage error (it would otherwise
    be silently ignored)."""
    from kvmodel import components

    mine = {o.name: o for o in component.options_for(command)}
    everyone = {o.name for c in components.registered() for o in c.options_for(command)}
    out: dict[str, Any] = {}
    for name in sorted(everyone):
        v = getattr(args, name, None)
        if v is None:
            continue
        o = mine.get(name)
        if o is None:
            owners = [c.name for c in components.registered() if any(x.name == name for x in c.options_for(command))]
            raise UsageError(f"--{name.replace('_', '-')} is an option of {', '.join(owners)}, not of {component.name}")
        if o.kind == "int" and not o.lo <= v <= o.hi:
            raise UsageError(f"{o.flag}: {component.name} takes {o.lo} .. {o.hi}, got {v}")
        if o.kind == "choice" and v not in o.choices:
            raise UsageError(f"{o.flag}: {component.name} takes one of {', '.join(o.choices)}, got {v}")
        out[name] = v
    return out


def explore_world(args: argparse.Namespace, component: Any) -> Any:
    """The bounded world ``kvmodel explore`` searches: each option's value (or its default) goes
    to the system's configuration or to the explorer space."""
    from kvmodel.components import EXPLORE, World

    given_ = component_values(args, component, EXPLORE)
    config: dict[str, Any] = {}
    space: dict[str, Any] = {}
    for o in component.options_for(EXPLORE):
        v = given_.get(o.name, o.default)
        if o.kind == "flag":
            v = bool(v)
            v = not v if o.invert else v
        elif v is None:
            continue
        (config if o.part == "config" else space)[o.target] = v
    return World(config, space)


def spec_universe(args: argparse.Namespace, component: Any) -> dict[str, Any]:
    """The Z3 universe from the options the user gave (the spec's defaults otherwise)."""
    from kvmodel.components import SPEC

    out: dict[str, Any] = {}
    decl = {o.name: o for o in component.options_for(SPEC)}
    for name, v in component_values(args, component, SPEC).items():
        o = decl[name]
        out[o.target] = (not v if o.invert else v) if o.kind == "flag" else v
    return out


def revision_quirks(component: str, name: str) -> frozenset[str]:
    """The quirks of a named revision; a usage error names the known ones."""
    from kvmodel.model.quirks import revision, revisions_of

    try:
        return revision(component, name).quirks
    except ValueError:
        known = ", ".join(r.name for r in revisions_of(component)) or "none recorded"
        raise UsageError(f"--revision: unknown revision {name!r} of {component} (known: {known})") from None


def quirks_of_args(args: argparse.Namespace, c: Any, default_faithful: bool) -> frozenset[str]:
    """The quirk set of explore / prove / bmc: a revision's, the named ones (with what they
    require), the seed's revision (faithful) or none."""
    from kvmodel.model.quirks import QUIRKS, faithful

    if getattr(args, "revision", None):
        return revision_quirks(c.name, args.revision)
    if args.quirk:
        names = set(args.quirk)
        for n in list(names):
            if n not in QUIRKS or QUIRKS[n].component != c.name:
                raise UsageError(f"unknown quirk {n!r} for {c.name}")
            names |= set(QUIRKS[n].requires)
        return frozenset(names)
    return faithful(c.name) if args.faithful or (default_faithful and not args.ideal) else frozenset()


def spec_quirks(args: argparse.Namespace, c: Any, default_faithful: bool) -> frozenset[str]:
    """As :func:`quirks_of_args`; a revision's or the faithful set restricted to what the spec's world
    reaches (named quirks are taken as asked: the spec refuses those it does not model)."""
    q = quirks_of_args(args, c, default_faithful)
    return q if args.quirk else c.modelled_quirks(q)
