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


def given(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    """The options among ``names`` the user set (their default is None)."""
    return [n for n in names if getattr(args, n, None) not in (None, False)]


def reject_foreign(args: argparse.Namespace, component: str, belongs: dict[str, tuple[str, ...]]) -> None:
    """Options that belong to other components than ``component`` are a usage error (they
    would otherwise be silently ignored)."""
    mine = set(belongs.get(component, ()))
    for _comp, names in sorted(belongs.items()):
        for n in names:
            if n in mine:
                continue
            if getattr(args, n, None) not in (None, False):
                owners = [c for c, ns in sorted(belongs.items()) if n in ns]
                raise UsageError(f"--{n.replace('_', '-')} is an option of {', '.join(owners)}, not of {component}")


def fill(args: argparse.Namespace, defaults: dict[str, Any]) -> None:
    for k, v in defaults.items():
        if getattr(args, k, None) is None:
            setattr(args, k, v)
