#!/usr/bin/env bash
# `pip install .` at the repository root (pyproject.toml + setup.py: CMake builds liblumen.so into
# the package), from a copy of the source tree, CUDA off, 2 build jobs:
#   1. into a fresh venv (system site packages: Debian's numpy, setuptools, wheel), offline
#      (--no-build-isolation --no-index); then, in another folder with LUMEN_LIBRARY and PYTHONPATH
#      unset, `import lumen` must load the library inside the venv's site-packages and compute a
#      Tofts fit and a Gaussian with known values, and read back a PNG it wrote;
#   2. the installed library has no RPATH/RUNPATH and resolves every dependency outside the tree;
#   3. `pip wheel .` makes a py3-none-<platform> wheel holding lumen/liblumen.so; the source copy is
#      deleted, the wheel installed into a second venv and checked the same way.
# Skips (77): no python3/numpy/venv, no cmake; and, only when Debian's setuptools/wheel are
# missing so that the build needs PyPI, when PyPI cannot be reached.
set -u
src=${LUMEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=${LUMEN_TEST_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -z "$PY" ]; then echo "SKIP: no python3"; exit 77; fi
if ! "$PY" -c 'import numpy' 2>/dev/null; then echo "SKIP: $PY lacks numpy (python3-numpy)"; exit 77; fi
if ! "$PY" -c 'import venv, ensurepip' 2>/dev/null; then echo "SKIP: $PY cannot make a venv (python3-venv)"; exit 77; fi
if ! command -v cmake >/dev/null 2>&1; then echo "SKIP: no cmake"; exit 77; fi

base=${LUMEN_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/lumen-pip.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# build isolation only when the system python lacks setuptools/wheel: that build needs PyPI
pipflags=(--disable-pip-version-check)
if "$PY" -c 'import setuptools, wheel' 2>/dev/null; then
  pipflags+=(--no-build-isolation --no-index)
  how="offline, Debian's setuptools (--no-build-isolation --no-index)"
else
  how="build isolation: setuptools from PyPI"
fi

# a copy of the source tree without build folders (a git checkout: its tracked and new files)
mkdir "$tmp/src"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z -co --exclude-standard | tar --null -cf - -T -) | tar -xf - -C "$tmp/src"
else
  (cd "$src" && tar --exclude='./build*' --exclude='*.egg-info' -cf - .) | tar -xf - -C "$tmp/src"
fi
[ -f "$tmp/src/pyproject.toml" ] && [ -f "$tmp/src/setup.py" ] || { echo "FAIL: no pyproject.toml/setup.py at the root of the copy"; exit 1; }

# the check run in a venv, from a folder outside the tree, with no LUMEN_LIBRARY/PYTHONPATH
cat > "$tmp/check.py" <<'EOF'
import os, sys, sysconfig
import numpy as np
import lumen

site = [os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")]
lib = os.path.realpath(lumen.library_path())
assert lumen.library_source() == "beside the package", lumen.library_source()
assert any(lib.startswith(s + os.sep) for s in site), (lib, site)
assert lib.startswith(os.path.realpath(sys.prefix) + os.sep), (lib, sys.prefix)
assert not lumen.cuda_built(), "built with LUMEN_CUDA=OFF, yet the library has CUDA"
# Tofts with a ramp AIF cp = t: C(t) = Ktrans (t / kep - (1 - exp(-kep t)) / kep^2), Ktrans 0.2, ve 0.4
t = np.arange(61) * 0.1
kt, kep = 0.2, 0.5
y = (kt * (t / kep - (1 - np.exp(-kep * t)) / kep ** 2))[None, :]
res = lumen.fit("tofts", y, t, aif=t, backend="cpu")
assert res.states[0] == 0 and abs(res.params[0, 0] - 0.2) < 1e-4 and abs(res.params[0, 1] - 0.4) < 1e-4, res.params
# Gaussian (sigma 2, truncate 4: radius 8) of a unit impulse: centre = (1 / sum_k exp(-k^2 / 8))^2
img = np.zeros((33, 33), np.float32)
img[16, 16] = 1
g = lumen.gaussian(img, 2.0)
w = np.exp(-np.arange(-8, 9) ** 2 / 8.0)
assert abs(g[16, 16] - (1 / w.sum()) ** 2) < 1e-7 and abs(g.sum() - 1) < 1e-5, (g[16, 16], g.sum())
# the I/O module is inside the library too
a = (np.arange(60, dtype=np.uint16).reshape(6, 10) * 1000)
lumen.write_image("rt.png", a)
b, meta = lumen.read_image("rt.png")
assert meta["bit_depth"] == 16 and (a == b).all()
# with GDCM's decoder module comes the helper that decodes in its own process when Python has threads
if os.path.exists(os.path.join(os.path.dirname(lib), "liblumen_gdcm.so")):
    import subprocess
    helper = os.path.join(os.path.dirname(lib), "lumen-dicom-decoder")
    assert os.access(helper, os.X_OK), helper
    r = subprocess.run([helper], capture_output=True, text=True)
    assert r.returncode == 2 and "helper of lumen's DICOM reader" in r.stderr, (r.returncode, r.stderr)
# the medical_image compatibility package is installed with it
from lumen.medical_image import Image, Filters
im = Image.from_array(img)
out = im.clone()
Filters.gaussian_filter(im, out, sigma=2.0)
assert abs(float(out.pixel_data[16, 16]) - float(g[16, 16])) < 1e-7, (out.pixel_data[16, 16], g[16, 16])
print("lumen %s from %s: Ktrans %.6f ve %.6f, gaussian centre %.8f" % (lumen.version(), lib, res.params[0, 0],
                                                                      res.params[0, 1], g[16, 16]))
EOF
check_in() { # venv label
  mkdir -p "$tmp/run-$2"
  local out
  if out=$(cd "$tmp/run-$2" && env -u LUMEN_LIBRARY -u PYTHONPATH "$1/bin/python" "$tmp/check.py" 2>&1); then
    ok "$2: $out"
  else
    bad "$2: the installed package does not work:"; echo "$out"
  fi
}
# the library inside a venv: no RPATH/RUNPATH, every dependency found outside the build tree
check_so() { # venv label
  local so
  so=$(find "$1" -path '*/site-packages/lumen/liblumen.so' | head -1)
  if [ -z "$so" ]; then bad "$2: no lumen/liblumen.so under $1"; return; fi
  if command -v readelf >/dev/null 2>&1; then
    if readelf -d "$so" | grep -Eq '\((RPATH|RUNPATH)\)'; then bad "$2: $so has $(readelf -d "$so" | grep -E 'R(UN)?PATH')"
    else ok "$2: $so has no RPATH/RUNPATH"; fi
  fi
  if command -v ldd >/dev/null 2>&1; then
    local deps; deps=$(ldd "$so")
    if grep -q 'not found' <<<"$deps"; then bad "$2: unresolved dependencies: $(grep 'not found' <<<"$deps" | tr '\n' ' ')"
    elif grep -q "$tmp" <<<"$deps"; then bad "$2: a dependency inside the test folder: $deps"
    else ok "$2: system dependencies $(awk '/=>/ {print $1}' <<<"$deps" | grep -Ev '^lib(c|m|dl|pthread|rt)\.so' | tr '\n' ' ')"; fi
  fi
}
pip_or_skip() { # log, pip command...
  local log=$1; shift
  if "$@" > "$log" 2>&1; then return 0; fi
  if [[ $how == build*isolation* ]] && grep -Eqi 'NewConnectionError|Temporary failure in name resolution|No matching distribution found for setuptools|Could not find a version that satisfies the requirement setuptools' "$log"; then
    echo "SKIP: Debian's python3-setuptools/python3-wheel are missing, so the build needs PyPI, which cannot be reached:"
    tail -3 "$log"; exit 77
  fi
  return 1
}

# 1. pip install . into a fresh venv
"$PY" -m venv --system-site-packages "$tmp/v1" > "$tmp/venv.log" 2>&1 || { echo "SKIP: venv failed: $(tail -1 "$tmp/venv.log")"; exit 77; }
if pip_or_skip "$tmp/pip1.log" env -C "$tmp/src" LUMEN_CUDA=OFF CMAKE_BUILD_PARALLEL_LEVEL=2 \
     "$tmp/v1/bin/pip" install -v "${pipflags[@]}" .; then
  ok "pip install . ($how): $(grep -o 'lumen [0-9.]*: CUDA=[A-Z]*.*' "$tmp/pip1.log" | head -1)"
  check_in "$tmp/v1" "pip install ."
  check_so "$tmp/v1" "pip install ."
else
  bad "pip install . failed:"; tail -40 "$tmp/pip1.log"
fi

# 2. pip wheel . (incremental: the CMake folder of step 1 is reused), then the tree is removed and
#    the wheel installed into a second venv
if pip_or_skip "$tmp/wheel.log" env -C "$tmp/src" LUMEN_CUDA=OFF CMAKE_BUILD_PARALLEL_LEVEL=2 \
     "$tmp/v1/bin/pip" wheel "${pipflags[@]}" --no-deps -w "$tmp/wheels" .; then
  whl=$(ls "$tmp/wheels"/lumen-*.whl 2>/dev/null | head -1)
  case $(basename "${whl:-none}") in
    lumen-0.1.0-py3-none-linux_*.whl) ok "pip wheel .: $(basename "$whl")" ;;
    *) bad "pip wheel .: expected lumen-0.1.0-py3-none-linux_<arch>.whl, got: $(ls "$tmp/wheels" 2>&1)" ;;
  esac
  if [ -n "$whl" ] && "$PY" -c 'import sys, zipfile; sys.exit(0 if "lumen/liblumen.so" in zipfile.ZipFile(sys.argv[1]).namelist() else 1)' "$whl"; then
    ok "the wheel holds lumen/liblumen.so"
  else
    bad "the wheel has no lumen/liblumen.so"
  fi
  rm -rf "$tmp/src"
  "$PY" -m venv --system-site-packages "$tmp/v2" > "$tmp/venv2.log" 2>&1
  if [ -n "$whl" ] && "$tmp/v2/bin/pip" install --disable-pip-version-check --no-index "$whl" > "$tmp/pip2.log" 2>&1; then
    ok "the wheel installs into a second venv (source tree removed)"
    check_in "$tmp/v2" "wheel"
    check_so "$tmp/v2" "wheel"
  else
    bad "installing the wheel failed:"; tail -20 "$tmp/pip2.log"
  fi
else
  bad "pip wheel . failed:"; tail -40 "$tmp/wheel.log"
fi
exit $fail
