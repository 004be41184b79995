#!/usr/bin/env bash
# The ops tables of docs/FILTERS.md and docs/SEGMENTATION.md are those scripts/ops_table.py prints
# from the op registry of the library beside LUMEN_BIN (a changed option, range or default in
# src/filter/op_table.c must be regenerated into the docs). Exit 77 (skip) without python3+numpy.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
src=${LUMEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
lib=$(cd "$(dirname "$bin")" && pwd)/liblumen.so
PY=${LUMEN_TEST_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -z "$PY" ] || ! "$PY" -c 'import numpy' 2>/dev/null; then echo "SKIP: no python3 with numpy"; exit 77; fi
if [ ! -f "$lib" ]; then echo "FAIL: no shared library at $lib"; exit 1; fi
if command -v ldd >/dev/null 2>&1 && ldd "$lib" 2>/dev/null | grep -q 'libasan'; then
  echo "SKIP: an ASan library cannot be loaded into an uninstrumented interpreter"; exit 77
fi
fail=0
for pair in "docs/FILTERS.md filter,statistic" "docs/SEGMENTATION.md segment"; do
  set -- $pair
  if LUMEN_LIBRARY="$lib" PYTHONPATH="$src/python" PYTHONDONTWRITEBYTECODE=1 \
      "$PY" "$src/scripts/ops_table.py" --kind "$2" --check "$src/$1"; then
    echo "ok: $1 ops table ($2) equals scripts/ops_table.py's"
  else
    echo "FAIL: $1"; fail=1
  fi
done
# and the check fails on a table that differs (a planted change)
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
sed 's/| `gaussian` | - |/| `gaussian` | blur |/' "$src/docs/FILTERS.md" > "$tmp"
if LUMEN_LIBRARY="$lib" PYTHONPATH="$src/python" "$PY" "$src/scripts/ops_table.py" --check "$tmp" 2>/dev/null; then
  echo "FAIL: a changed table passed the check"; fail=1
else
  echo "ok: a changed table fails the check"
fi
exit $fail
