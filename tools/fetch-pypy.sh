#!/usr/bin/env bash
# Fetch PyPy (Python 3.11) into a folder, for `benchmarks/interpreters.py` only: the same
# exhaustive searches under CPython and PyPy (issue 25, goal 3). Not part of kvmodel's install;
# nothing else uses it.
#
# Debian bookworm (this machine) packages no PyPy for Python 3.11, pypy.org is not reachable from
# here, and trixie's pypy3 (7.3.19) needs glibc 2.38 where bookworm has 2.36. So this takes
# Debian forky's pypy3 (8.0.1, Python 3.11) with forky's glibc and the libraries it links,
# unpacked into DIR (no root, nothing installed system-wide), and writes DIR/pypy, which starts
# PyPy through forky's own dynamic loader. DIR/site holds the two packages kvmodel's explorer
# needs outside the standard library: attrs (pure Python) and xxhash (PyPI's PyPy 3.11 wheel,
# built for PyPy 7.3's extension tag; it loads under 8.0, and the benchmark checks its hashes
# against CPython's before it measures anything).
#
# Usage: tools/fetch-pypy.sh DIR   (needs curl, xz, dpkg-deb and the project's venv for pip)
set -euo pipefail
DIR=${1:?usage: tools/fetch-pypy.sh DIR}
cd "$(dirname "$0")/.."
PIP=(python -m pip)
MIRROR=http://deb.debian.org/debian
mkdir -p "$DIR/debs" "$DIR/root" "$DIR/site"
DIR=$(cd "$DIR" && pwd)
curl -fsS -m 120 "$MIRROR/dists/forky/main/binary-amd64/Packages.xz" -o "$DIR/Packages.xz"
xz -dc "$DIR/Packages.xz" > "$DIR/Packages"
# pypy3's own packages and what its Pre-Depends name (forky, 2026-12)
for pkg in pypy3 pypy3-lib libc6 libbz2-1.0 libexpat1 libffi8 libgcc-s1 libgdbm6t64 liblzma5 \
    libncursesw6 libsqlite3-0 libssl3t64 libtinfo6 zlib1g; do
  file=$(awk -v p="$pkg" '$0 == "Package: " p {f = 1} f && /^Filename:/ {print $2; exit}' "$DIR/Packages")
  if [ -z "$file" ]; then echo "fetch-pypy: $pkg is not in forky's index" >&2; exit 1; fi
  curl -fsS -m 300 "$MIRROR/$file" -o "$DIR/debs/$(basename "$file")"
  dpkg-deb -x "$DIR/debs/$(basename "$file")" "$DIR/root"
done
cat > "$DIR/pypy" <<EOF
#!/bin/sh
# PyPy from Debian forky, started by forky's dynamic loader with forky's libraries
L="$DIR/root/usr/lib/x86_64-linux-gnu"
exec "\$L/ld-linux-x86-64.so.2" --library-path "\$L" "$DIR/root/usr/bin/pypy3.11" "\$@"
EOF
chmod +x "$DIR/pypy"
rm -rf "$DIR/wheels"
"${PIP[@]}" download -q --no-deps --only-binary=:all: -d "$DIR/wheels" \
  "attrs==$(python -c 'import importlib.metadata as m; print(m.version("attrs"))')" 2>&1 | grep -v "^WARNING: Location" || true
# the newest xxhash with a PyPy 3.11 wheel (the venv's own release may have none)
"${PIP[@]}" download -q --no-deps --only-binary=:all: --implementation pp --python-version 311 \
  --abi pypy311_pp73 --platform manylinux_2_17_x86_64 -d "$DIR/wheels" xxhash 2>&1 | grep -v "^WARNING: Location" || true
for w in "$DIR"/wheels/*.whl; do python -m zipfile -e "$w" "$DIR/site"; done
for so in "$DIR"/site/xxhash/_xxhash.pypy311-pp73-*.so; do cp "$so" "${so/pp73/pp80}"; done
"$DIR/pypy" -c 'import sys; print("fetch-pypy:", sys.version.replace("\n", " "))'
