#!/usr/bin/env bash
# The Python binding (python/): pytest with Debian's /usr/bin/python3 (python3-numpy,
# python3-pytest) against the shared library beside LUMEN_BIN, then an offline
# `pip install --no-index --no-build-isolation` of the package into a throw-away venv with the
# library copied beside the package (install.sh's layout), and the tests again on that install
# (without LUMEN_LIBRARY, which would win over the library inside the package). The root
# `pip install .` (CMake build into the package) is tests/cli/test_pip_install.sh.
# Exit 77 (skip) when python3, numpy or pytest is missing; pytest's "no tests collected" (5) fails.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
src=${LUMEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bdir=$(cd "$(dirname "$bin")" && pwd)
lib=$bdir/liblumen.so
PY=${LUMEN_TEST_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -z "$PY" ]; then echo "SKIP: no python3"; exit 77; fi
if ! "$PY" -c 'import numpy, pytest' 2>/dev/null; then
  echo "SKIP: $PY lacks numpy or pytest (scripts/setup.sh installs python3-numpy python3-pytest)"; exit 77
fi
if [ ! -f "$lib" ]; then echo "FAIL: no shared library at $lib (target lumen_shared)"; exit 1; fi
if command -v ldd >/dev/null 2>&1 && ldd "$lib" 2>/dev/null | grep -q 'libasan'; then
  echo "SKIP: the library is built with -fsanitize=address, which cannot be loaded into an uninstrumented interpreter"; exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lumen-py.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
fail=0
run_pytest() { # label, extra env...
  local label=$1 log; shift
  log=$tmp/pytest.$RANDOM.log
  ( cd "$tmp" && env "$@" LUMEN_BIN="$bin" LUMEN_SOURCE_DIR="$src" PYTHONDONTWRITEBYTECODE=1 \
      "$PY_RUN" -m pytest -q -p no:cacheprovider "$src/python/tests" ) > "$log" 2>&1
  local rc=$?
  tail -n 3 "$log"
  if [ $rc -eq 5 ]; then echo "FAIL: $label: pytest collected no tests"; fail=1
  elif [ $rc -ne 0 ]; then echo "FAIL: $label: pytest exit $rc"; cat "$log"; fail=1
  else echo "ok: $label"; fi
}

# 1. from the source tree, library through LUMEN_LIBRARY
PY_RUN=$PY run_pytest "build tree ($PY)" LUMEN_LIBRARY="$lib"

# 2. pip install offline into a venv that sees the system numpy, library beside the package
if "$PY" -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 && [ -x "$tmp/venv/bin/pip" ]; then
  cp -r "$src/python" "$tmp/stage"
  rm -rf "$tmp/stage/build" "$tmp/stage"/*.egg-info
  cp -L "$lib" "$tmp/stage/lumen/liblumen.so"
  if "$tmp/venv/bin/pip" install -q --no-index --no-build-isolation --disable-pip-version-check "$tmp/stage" \
       > "$tmp/pip.log" 2>&1; then
    echo "ok: pip install --no-index --no-build-isolation ./python"
    where=$(cd "$tmp" && env -u LUMEN_LIBRARY "$tmp/venv/bin/python" -c 'import lumen; print(lumen.library_source())' 2>&1)
    if [ "$where" = "beside the package" ]; then echo "ok: installed package loads the library beside itself"
    else echo "FAIL: installed package loaded the library from: $where"; fail=1; fi
    # the installed package with the library inside it (LUMEN_LIBRARY would win over it)
    PY_RUN=$tmp/venv/bin/python run_pytest "installed package (venv)" -u LUMEN_LIBRARY LUMEN_TEST_INSTALLED=1
  else
    echo "FAIL: offline pip install of python/"; cat "$tmp/pip.log"; fail=1
  fi
else
  echo "note: $PY -m venv unavailable (python3-venv); the install check is skipped"; tail -3 "$tmp/venv.log"
fi
exit $fail
