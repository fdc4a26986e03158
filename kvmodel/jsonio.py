"""Reading untrusted JSON files (traces, vectors) so that nothing a file holds can crash us;
writing outputs so that a failed write names its file (:func:`write_text`).

:func:`read_json` returns the document or raises ``error(message)`` with one line naming the
file and the problem: a directory or an unreadable path, a file over the size limit (a device,
a pipe or a ``/proc`` file, which report no size, are read at most that far), bytes that are
not UTF-8, a lone surrogate escape (``\\ud800``), ``NaN`` / ``Infinity``, an integer of more
than 100 digits, nesting deeper than 100 levels, or a JSON syntax error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 100
MAX_INT_DIGITS = 100


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number here")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _check(x: Any, depth: int = 0) -> str | None:
    """The first problem of a loaded document: nesting too deep, or a string that is not
    valid UTF-8 (a lone surrogate)."""
    stack: list[tuple[Any, int]] = [(x, depth)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            return f"nested more than {MAX_DEPTH} levels deep"
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return f"a string holds a lone surrogate ({v[:20]!r})"
        elif isinstance(v, dict):
            for k, w in v.items():
                stack.append((k, d + 1))
                stack.append((w, d + 1))
        elif isinstance(v, list):
            stack.extend((w, d + 1) for w in v)
    return None


def read_json(path: str | Path, error: Callable[[str], Exception]) -> Any:
    p = Path(path)
    try:
        if p.is_dir():
            raise error(f"{p}: is a directory, not a file")
        too_big = error(f"{p}: larger than {MAX_BYTES // (1024 * 1024)} MiB")
        if p.stat().st_size > MAX_BYTES:
            raise too_big
        # a bounded read: a device, a pipe or a /proc file reports no size (``/dev/zero`` would
        # otherwise be read until memory runs out)
        with p.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise too_big
    except OSError as e:
        raise error(f"{p}: cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_int=_int)
    except json.JSONDecodeError as e:
        raise error(f"{p}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise error(f"{p}: not usable JSON: nested too deeply") from None
    except ValueError as e:
        raise error(f"{p}: not usable JSON: {str(e)[:120]}") from None
    problem = _check(data)
    if problem:
        raise error(f"{p}: not usable JSON: {problem}")
    return data


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically, making its directory: the text goes to a temporary
    file in the same folder, flushed to disk, then renamed over ``path``, so a reader sees the old
    file or the whole new one, never a part, and two runs writing one path never interleave (the
    last rename wins). On failure (a full disk, a directory in the way) the temporary file and the
    old ``path`` are both removed — a stale file (a passing JUnit report of an earlier run beside
    this run's error) is never left — and the ``OSError`` names the file. An interrupt mid-write
    leaves the old file and no temporary one. A target that exists and is not a regular file (a
    device such as ``/dev/stdout`` or ``/dev/full``, a pipe) is written in place, never replaced;
    a symbolic link's target is replaced, the link kept."""
    return write_bytes(path, text.encode("utf-8"))


def write_bytes(path: str | Path, data: bytes) -> Path:
    """:func:`write_text` for bytes."""
    import os
    import stat
    import tempfile

    try:
        mode = os.stat(path).st_mode  # through symbolic links
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        # a device, a pipe or a socket (``/dev/stdout``, ``/dev/full``): written as it is, never
        # replaced by a file
        try:
            with open(path, "wb") as f:
                f.write(data)
        except OSError as e:
            raise OSError(f"{path}: cannot write: {e.strerror or e}") from None
        return Path(path)
    p = Path(os.path.realpath(path))  # through a symbolic link: its target is replaced
    tmp: str | None = None
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name[:80]}.", suffix=".tmp", dir=p.parent)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        finally:
            os.close(fd)
        os.chmod(tmp, _MODE)
        os.replace(tmp, p)
        tmp = None
    except OSError as e:
        if not p.is_dir():
            with _suppress():
                p.unlink()
        raise OSError(f"{path}: cannot write: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            with _suppress():
                os.unlink(tmp)
    return Path(path)


def _umask() -> int:
    import os

    old = os.umask(0o022)
    os.umask(old)
    return old


_MODE = 0o666 & ~_umask()  # what open() would have given the file (mkstemp gives 0600)


def _suppress() -> Any:
    import contextlib

    return contextlib.suppress(OSError)
