#!/usr/bin/env bash
# lumen installer (the analogue of ROCKETSHIP's install.py): builds lumen for this machine,
# installs the library, headers, CLI, pkg-config and CMake files under a prefix, creates a Python
# virtual environment with the binding, builds the MATLAB/Octave MEX files when MATLAB or Octave
# is found, and ends with the PASS/FAIL/SKIP table of `lumen backends`.
# Missing optional parts (CUDA, Python, MATLAB/Octave) are warnings, not failures.
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PREFIX=${HOME:-/tmp}/.local/lumen
BUILD_DIR=$REPO/build-install
BUILD_TYPE=Release
JOBS=$(nproc 2>/dev/null || echo 2)
CUDA_MODE=auto
CUDA_ARCH=""
VENV_PATH=""
RECREATE_VENV=0
WITH_PYTHON=1
PYTHON=""
WITH_MATLAB=1
MATLAB_CMD=""
SETUP_DEPS=0
RUN_TESTS=0
CMAKE_EXTRA=()

usage() {
  cat <<EOF
usage: ./install.sh [options]

Builds and installs lumen, its Python binding and MEX files, then prints the health table.

install location:
  --prefix DIR          install under DIR: bin/, lib/, include/, lib/pkgconfig/lumen.pc,
                        lib/cmake/lumen/, share/lumen/matlab/ (default: \$HOME/.local/lumen)
  --build-dir DIR       CMake build folder (default: $REPO/build-install)
  --build-type TYPE     CMake build type: Release (default), RelWithDebInfo, Debug
  --jobs N              parallel build jobs (default: $(nproc 2>/dev/null || echo 2), the core count)
  --cmake-arg ARG       one more argument for CMake's configure step (repeatable)

GPU:
  --cuda MODE           auto (default): build the CUDA tier when nvcc is found (nvidia-smi is
                        asked first for the GPUs and their compute capabilities, then nvcc);
                        on: require CUDA (fail without nvcc); off: CPU only
  --cuda-arch LIST      CUDA architectures, e.g. "80;90" (default: those of the GPUs nvidia-smi
                        reports, limited to what nvcc supports; without a GPU lumen's default list)

Python binding:
  --venv-path DIR       virtual environment for the binding (default: PREFIX/venv); created with
                        --system-site-packages so numpy comes from the system when PyPI is unreachable
  --recreate-venv       delete and recreate the virtual environment
  --python PY           interpreter for the venv (default: /usr/bin/python3 when it has numpy, else python3)
  --no-python           do not create the venv or install the binding

MATLAB / Octave:
  --no-matlab           do not build the MEX files (lumen_fit, lumen_cuda_available)
  --matlab-cmd PATH     the matlab executable to build with MATLAB's mex (default: matlab on PATH);
                        Octave's mkoctfile is used when found

other:
  --setup-deps          run scripts/setup.sh first (installs the Debian packages; needs root/sudo)
  --run-tests           build the tests and run ctest before installing
  -h, --help            this help

The installer exits 0 when lumen was built and installed (optional parts that are missing are
reported as SKIP/WARN), 1 when the build or installation failed, 2 for a bad option.
EOF
}

while [ $# -gt 0 ]; do
  case $1 in
    --prefix) PREFIX=${2:?--prefix needs a folder}; shift 2 ;;
    --prefix=*) PREFIX=${1#*=}; shift ;;
    --build-dir) BUILD_DIR=${2:?--build-dir needs a folder}; shift 2 ;;
    --build-type) BUILD_TYPE=${2:?}; shift 2 ;;
    --jobs|-j) JOBS=${2:?}; shift 2 ;;
    --cmake-arg) CMAKE_EXTRA+=("${2:?}"); shift 2 ;;
    --cuda) CUDA_MODE=${2:?}; shift 2 ;;
    --cuda-arch) CUDA_ARCH=${2:?}; shift 2 ;;
    --venv-path) VENV_PATH=${2:?}; shift 2 ;;
    --recreate-venv) RECREATE_VENV=1; shift ;;
    --python) PYTHON=${2:?}; shift 2 ;;
    --no-python) WITH_PYTHON=0; shift ;;
    --no-matlab) WITH_MATLAB=0; shift ;;
    --matlab-cmd) MATLAB_CMD=${2:?}; shift 2 ;;
    --setup-deps) SETUP_DEPS=1; shift ;;
    --run-tests) RUN_TESTS=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $CUDA_MODE in auto|on|off) ;; *) echo "install.sh: --cuda must be auto, on or off" >&2; exit 2 ;; esac

mkdir -p "$PREFIX" || { echo "install.sh: cannot create $PREFIX" >&2; exit 1; }
PREFIX=$(cd "$PREFIX" && pwd)
[ -n "$VENV_PATH" ] || VENV_PATH=$PREFIX/venv
LOG_DIR=$BUILD_DIR/install-logs
mkdir -p "$LOG_DIR"

say() { printf '[install] %s\n' "$*"; }
warn() { printf '[install] WARNING: %s\n' "$*" >&2; }
ROWS=()
row() { ROWS+=("$(printf '%-14s %-6s %s' "$1" "$2" "$3")"); }
die() { printf '[install] ERROR: %s\n' "$*" >&2; summary; exit 1; }
summary() {
  echo
  echo "installer     status detail"
  for r in "${ROWS[@]}"; do echo "$r"; done
}

# ---------------------------------------------------------------------------- platform
OS=$(uname -s); ARCH=$(uname -m)
DISTRO=""
[ -r /etc/os-release ] && DISTRO=$(. /etc/os-release && echo "${PRETTY_NAME:-$ID}")
say "platform: $OS $ARCH${DISTRO:+ ($DISTRO)}, $JOBS build jobs"
[ "$OS" = Linux ] || warn "lumen is developed and tested on Linux; $OS is untried"
row platform PASS "$OS $ARCH${DISTRO:+, $DISTRO}"

if [ $SETUP_DEPS -eq 1 ]; then
  say "installing the Debian packages (scripts/setup.sh)"
  bash "$REPO/scripts/setup.sh" || warn "scripts/setup.sh failed; continuing with what is installed"
fi
for tool in cmake cc; do
  command -v $tool >/dev/null 2>&1 || die "$tool not found (Debian: sudo scripts/setup.sh, or --setup-deps)"
done

# ---------------------------------------------------------------------------- CUDA
NVCC=""
GPU_ARCHS=""
if [ "$CUDA_MODE" != off ]; then
  if command -v nvidia-smi >/dev/null 2>&1; then
    gpus=$(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null || true)
    if [ -n "$gpus" ]; then
      say "nvidia-smi: $(echo "$gpus" | wc -l) GPU(s): $(echo "$gpus" | cut -d, -f1,2 | paste -sd';' -)"
      GPU_ARCHS=$(echo "$gpus" | cut -d, -f2 | tr -d ' .' | grep -E '^[0-9]+$' | sort -un | paste -sd';' -)
      [ -n "$GPU_ARCHS" ] || GPU_ARCHS=""
    else
      say "nvidia-smi found but reports no GPU (no driver loaded?)"
    fi
  else
    say "nvidia-smi not found: no NVIDIA driver on this machine"
  fi
  NVCC=$(command -v nvcc || true)
  [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
  if [ -n "$NVCC" ]; then
    say "nvcc: $NVCC ($("$NVCC" --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1))"
    if [ -z "$CUDA_ARCH" ] && [ -n "$GPU_ARCHS" ]; then
      supported=$("$NVCC" --list-gpu-arch 2>/dev/null | sed -n 's/^compute_//p' | tr '\n' ' ')
      keep=()
      for a in ${GPU_ARCHS//;/ }; do
        if [ -z "$supported" ] || [[ " $supported " == *" $a "* ]]; then keep+=("$a"); else
          warn "nvcc cannot compile for sm_$a (this GPU); it will run the nearest older architecture's PTX if any"; fi
      done
      CUDA_ARCH=$(IFS=';'; echo "${keep[*]}")
    fi
  elif [ "$CUDA_MODE" = on ]; then
    die "--cuda on but nvcc was not found (install the CUDA toolkit or put nvcc on PATH)"
  elif [ -n "$GPU_ARCHS" ]; then
    warn "a GPU is present but the CUDA toolkit (nvcc) is not: building without the CUDA tier"
  fi
fi
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DCMAKE_INSTALL_PREFIX="$PREFIX")
if [ -n "$NVCC" ]; then
  CMAKE_ARGS+=(-DLUMEN_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC")
  [ -n "$CUDA_ARCH" ] && CMAKE_ARGS+=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH")
  row cuda PASS "nvcc $NVCC, architectures ${CUDA_ARCH:-the lumen default}${GPU_ARCHS:+ (GPUs: sm_${GPU_ARCHS//;/, sm_})}"
else
  CMAKE_ARGS+=(-DLUMEN_CUDA=OFF)
  row cuda SKIP "$([ "$CUDA_MODE" = off ] && echo "--cuda off" || echo "no nvcc: CPU tiers only")"
fi
if [ $RUN_TESTS -eq 1 ]; then CMAKE_ARGS+=(-DLUMEN_TESTS=ON); else CMAKE_ARGS+=(-DLUMEN_TESTS=OFF); fi
CMAKE_ARGS+=(-DLUMEN_TEST_HOOKS=OFF) # an installed lumen has no fault-injection hooks

# ---------------------------------------------------------------------------- build, install
say "configuring in $BUILD_DIR (log: $LOG_DIR/configure.log)"
if ! cmake -S "$REPO" -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" "${CMAKE_EXTRA[@]}" > "$LOG_DIR/configure.log" 2>&1; then
  tail -n 30 "$LOG_DIR/configure.log" >&2; row build FAIL "cmake configure failed"; die "configure failed"
fi
grep -E '^-- lumen [0-9]' "$LOG_DIR/configure.log" | sed 's/^-- /[install] /'
# the build takes minutes: print its progress at every 10 % (the full output goes to the log)
build_with_progress() {
  cmake --build "$BUILD_DIR" -j "$JOBS" 2>&1 | tee "$LOG_DIR/build.log" | awk '
    match($0, /^\[ *[0-9]+%\]/) { p = substr($0, 2, RLENGTH - 3) + 0
      if (p >= next_p) { printf "[install]   build %3d%%\n", p; fflush(); next_p = p - p % 10 + 10 } }'
  return "${PIPESTATUS[0]}"
}
say "building with $JOBS jobs (log: $LOG_DIR/build.log)"
if ! build_with_progress; then
  tail -n 40 "$LOG_DIR/build.log" >&2; row build FAIL "build failed, see $LOG_DIR/build.log"; die "build failed"
fi
row build PASS "$BUILD_TYPE in $BUILD_DIR"
if [ $RUN_TESTS -eq 1 ]; then
  say "running the tests (log: $LOG_DIR/ctest.log)"
  if ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure > "$LOG_DIR/ctest.log" 2>&1; then
    row tests PASS "$(grep -E 'tests passed' "$LOG_DIR/ctest.log" | tail -1)"
  else
    row tests FAIL "$(grep -E 'tests passed|tests failed' "$LOG_DIR/ctest.log" | tail -1); see $LOG_DIR/ctest.log"
    warn "some tests failed; installing anyway"
  fi
fi
say "installing into $PREFIX"
if ! cmake --install "$BUILD_DIR" > "$LOG_DIR/install.log" 2>&1; then
  tail -n 20 "$LOG_DIR/install.log" >&2; row install FAIL "cmake --install failed"; die "install failed"
fi
LIBDIR=""
for d in lib lib64 lib/x86_64-linux-gnu lib/aarch64-linux-gnu; do
  [ -e "$PREFIX/$d/liblumen.so" ] && { LIBDIR=$PREFIX/$d; break; }
done
[ -n "$LIBDIR" ] || { row install FAIL "no liblumen.so under $PREFIX"; die "liblumen.so was not installed"; }
[ -x "$PREFIX/bin/lumen" ] || { row install FAIL "no $PREFIX/bin/lumen"; die "the lumen CLI was not installed"; }
row install PASS "$PREFIX/bin/lumen, $LIBDIR/liblumen.so, $PREFIX/include/lumen/"
VERSION=$("$PREFIX/bin/lumen" --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -1)
[ -n "$VERSION" ] || VERSION=$(sed -n 's/^project(lumen VERSION \([0-9.]*\).*/\1/p' "$REPO/CMakeLists.txt")

# pkg-config and CMake package files: written by cmake/LumenInstall.cmake when CMakeLists.txt
# includes it, else here.
PC=$LIBDIR/pkgconfig/lumen.pc
if [ ! -f "$PC" ]; then
  mkdir -p "$LIBDIR/pkgconfig"
  private="-lm -lpthread -ldl"
  grep -q 'OpenMP=ON' "$LOG_DIR/configure.log" && private="$private -fopenmp"
  grep -q 'GSL=ON' "$LOG_DIR/configure.log" && private="$private -lgsl -lgslcblas"
  [ -n "$NVCC" ] && private="$private -L$(dirname "$(dirname "$NVCC")")/lib64 -lcudart_static -lrt"
  cat > "$PC" <<EOF
prefix=$PREFIX
exec_prefix=\${prefix}
libdir=$LIBDIR
includedir=\${prefix}/include

Name: lumen
Description: DCE-MRI and T1 fitting, image filters on CPU and CUDA
Version: $VERSION
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -llumen
Libs.private: $private
EOF
fi
CMCFG=$LIBDIR/cmake/lumen/lumenConfig.cmake
if [ ! -f "$CMCFG" ]; then
  mkdir -p "$LIBDIR/cmake/lumen"
  cat > "$CMCFG" <<EOF
# lumen CMake package (written by install.sh): find_package(lumen) gives lumen::lumen.
set(lumen_VERSION $VERSION)
set(lumen_INCLUDE_DIRS "$PREFIX/include")
if(NOT TARGET lumen::lumen)
  add_library(lumen::lumen SHARED IMPORTED)
  set_target_properties(lumen::lumen PROPERTIES IMPORTED_LOCATION "$LIBDIR/liblumen.so"
    INTERFACE_INCLUDE_DIRECTORIES "$PREFIX/include")
endif()
set(lumen_LIBRARIES lumen::lumen)
set(lumen_FOUND TRUE)
EOF
  cat > "$LIBDIR/cmake/lumen/lumenConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION $VERSION)
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF
fi

# A small C program built against the installed pkg-config file must run a fit.
check_dir=$(mktemp -d "${TMPDIR:-/tmp}/lumen-install.XXXXXX")
cat > "$check_dir/fit_check.c" <<'EOF'
#include <math.h>
#include <stdio.h>
#include <lumen/context.h>
#include <lumen/fit.h>
int main(void) {
  enum { N = 61 };
  double t[N], cp[N], y[N], p[2];
  int32_t st;
  for (int i = 0; i < N; ++i) { /* ramp AIF: closed-form Tofts with Ktrans 0.2, ve 0.4 */
    t[i] = 0.1 * i; cp[i] = t[i];
    y[i] = 0.2 * (t[i] / 0.5 - (1 - exp(-0.5 * t[i])) / 0.25);
  }
  lumen_ctx *ctx; lumen_fit_plan *plan; lumen_fit_options o; lumen_fit_results r = {0};
  if (lumen_ctx_create(&ctx)) return 1;
  lumen_fit_options_init(&o);
  if (lumen_fit_plan_create(ctx, &o, N, t, cp, &plan)) { fprintf(stderr, "%s\n", lumen_ctx_last_error(ctx)); return 1; }
  r.params = p; r.state = &st;
  if (lumen_fit_execute_f64(ctx, plan, 1, y, NULL, &r)) { fprintf(stderr, "%s\n", lumen_ctx_last_error(ctx)); return 1; }
  printf("Ktrans %.4f ve %.4f state %d backend %s\n", p[0], p[1], (int)st, r.backend_used);
  lumen_fit_plan_destroy(plan); lumen_ctx_destroy(ctx);
  return (st == 0 && fabs(p[0] - 0.2) < 1e-3 && fabs(p[1] - 0.4) < 1e-3) ? 0 : 1;
}
EOF
if command -v pkg-config >/dev/null 2>&1; then
  flags=$(PKG_CONFIG_PATH=$LIBDIR/pkgconfig pkg-config --cflags --libs lumen 2>"$check_dir/pc.err")
  if [ -n "$flags" ] && cc -std=c11 -o "$check_dir/fit_check" "$check_dir/fit_check.c" $flags -lm > "$check_dir/cc.log" 2>&1 \
     && out=$("$check_dir/fit_check" 2>&1); then
    row pkg-config PASS "$PC: a C program built with \`pkg-config --cflags --libs lumen\` ran a fit ($out)"
  else
    row pkg-config FAIL "$PC: the fit check did not build or run: $(cat "$check_dir/pc.err" "$check_dir/cc.log" 2>/dev/null | head -3 | tr '\n' ' ')${out:-}"
  fi
else
  row pkg-config WARN "$PC written; pkg-config not installed, so it was not tried"
fi
row cmake-config PASS "$CMCFG (find_package(lumen CONFIG) with CMAKE_PREFIX_PATH=$PREFIX)"

# ---------------------------------------------------------------------------- Python binding
if [ $WITH_PYTHON -eq 0 ]; then
  row python SKIP "--no-python"
else
  if [ -z "$PYTHON" ]; then
    if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then PYTHON=/usr/bin/python3
    else PYTHON=$(command -v python3 || true); fi
  fi
  if [ -z "$PYTHON" ]; then
    warn "no python3 found: the Python binding is not installed"; row python SKIP "no python3"
  else
    [ $RECREATE_VENV -eq 1 ] && [ -d "$VENV_PATH" ] && { say "removing $VENV_PATH (--recreate-venv)"; rm -rf "$VENV_PATH"; }
    ok=1
    if [ ! -x "$VENV_PATH/bin/python" ]; then
      say "creating the virtual environment $VENV_PATH ($PYTHON, --system-site-packages)"
      if ! "$PYTHON" -m venv --system-site-packages "$VENV_PATH" > "$LOG_DIR/venv.log" 2>&1; then
        warn "$PYTHON -m venv failed (Debian: apt-get install python3-venv): $(tail -1 "$LOG_DIR/venv.log")"; ok=0
        row python WARN "venv creation failed, see $LOG_DIR/venv.log"
      fi
    else
      say "using the existing virtual environment $VENV_PATH (--recreate-venv to rebuild it)"
    fi
    if [ $ok -eq 1 ]; then
      VPY=$VENV_PATH/bin/python
      if ! "$VPY" -c 'import numpy' 2>/dev/null; then
        say "numpy is not in the venv or the system: trying PyPI"
        "$VPY" -m pip install -q numpy > "$LOG_DIR/numpy.log" 2>&1 || warn "numpy could not be installed (offline?): the binding needs it"
      fi
      stage=$check_dir/python
      cp -r "$REPO/python" "$stage"
      rm -rf "$stage/build" "$stage"/*.egg-info "$stage/lumen/__pycache__" "$stage/lumen"/liblumen* "$stage/lumen/lumen-dicom-decoder"
      cp -L "$LIBDIR/liblumen.so" "$stage/lumen/liblumen.so"
      [ -e "$LIBDIR/liblumen_gdcm.so" ] && cp -L "$LIBDIR/liblumen_gdcm.so" "$stage/lumen/liblumen_gdcm.so"
      # the DICOM decoder helper (installed in PREFIX/libexec), beside the package's liblumen.so
      [ -x "$PREFIX/libexec/lumen-dicom-decoder" ] && cp -L "$PREFIX/libexec/lumen-dicom-decoder" "$stage/lumen/"
      if "$VPY" -m pip install -q --no-index --no-build-isolation --disable-pip-version-check --upgrade "$stage" \
           > "$LOG_DIR/pip.log" 2>&1 || "$VPY" -m pip install -q --upgrade "$stage" >> "$LOG_DIR/pip.log" 2>&1; then
        if info=$(cd / && "$VPY" -c 'import lumen; print("lumen %s from %s, cuda_available %s" % (lumen.version(), lumen.library_source(), lumen.cuda_available()))' 2>&1); then
          row python PASS "$VENV_PATH: $info"
        else
          row python FAIL "installed but import failed: $(echo "$info" | tail -1)"
        fi
      else
        warn "pip could not install the binding: $(tail -2 "$LOG_DIR/pip.log" | tr '\n' ' ')"
        row python FAIL "pip install failed, see $LOG_DIR/pip.log"
      fi
    fi
  fi
fi

# ---------------------------------------------------------------------------- MEX
if [ $WITH_MATLAB -eq 0 ]; then
  row mex SKIP "--no-matlab"
else
  MEXDIR=$PREFIX/share/lumen/matlab
  mkdir -p "$MEXDIR"
  args=(--lib "$LIBDIR" --include "$PREFIX/include" --out "$MEXDIR")
  [ -n "$MATLAB_CMD" ] && args+=(--matlab-cmd "$MATLAB_CMD")
  bash "$REPO/matlab/build_mex.sh" "${args[@]}" > "$LOG_DIR/mex.log" 2>&1
  rc=$?
  cp "$REPO/matlab/build_mex.sh" "$MEXDIR/" 2>/dev/null
  cp "$REPO/matlab"/*.c "$MEXDIR/" 2>/dev/null
  if [ $rc -eq 3 ]; then
    warn "neither MATLAB (mex) nor Octave (mkoctfile) found: MEX files not built (--matlab-cmd PATH for MATLAB)"
    row mex SKIP "no MATLAB or Octave (mkoctfile)"
  elif [ $rc -ne 0 ]; then
    warn "building the MEX files failed: see $LOG_DIR/mex.log"; row mex FAIL "build failed, see $LOG_DIR/mex.log"
  else
    built=$(sed -n 's/^build_mex: \(Octave\|MATLAB\) .*\/\([a-z_]*\.mex[a-z0-9]*\)$/\1 \2/p' "$LOG_DIR/mex.log" | paste -sd, -)
    detail="$MEXDIR: $built; addpath('$MEXDIR')"
    OCT=$(command -v octave-cli || true)
    if [ -n "$OCT" ] && [ -f "$MEXDIR/lumen_cuda_available.mex" ]; then
      if v=$(cd "$check_dir" && HOME=$check_dir "$OCT" --no-gui --norc --quiet --eval "addpath('$MEXDIR'); printf('%d', lumen_cuda_available())" 2>/dev/null); then
        detail="$detail; Octave lumen_cuda_available() = ${v:0:1}"
      else
        row mex FAIL "built, but Octave could not call lumen_cuda_available"; detail=""
      fi
    fi
    [ -n "$detail" ] && row mex PASS "$detail"
  fi
fi
rm -rf "$check_dir"

# ---------------------------------------------------------------------------- health table
# where the bindings went, for `lumen backends` (src/diag/health_bindings.c): its python and mex
# rows are then the installer's too (one check, one answer)
mkdir -p "$PREFIX/share/lumen"
{
  echo "# written by install.sh: where lumen backends looks for the bindings"
  [ $WITH_PYTHON -eq 1 ] && [ -x "$VENV_PATH/bin/python" ] && echo "python=$VENV_PATH/bin/python"
  [ $WITH_MATLAB -eq 1 ] && echo "mex=$PREFIX/share/lumen/matlab"
  true
} > "$PREFIX/share/lumen/bindings.conf" || warn "cannot write $PREFIX/share/lumen/bindings.conf"
echo
say "health report: $PREFIX/bin/lumen backends"
echo
"$PREFIX/bin/lumen" backends
hrc=$?
[ $hrc -ne 0 ] && warn "\`lumen backends\` reports a failed part (exit $hrc): see the FAIL rows above"
# the installer's python/mex rows that say PASS take backends' answer (a SKIP or FAIL of the
# installer's own steps stays, with its reason)
hjson=$("$PREFIX/bin/lumen" backends --json 2>/dev/null)
for part in python mex; do
  hr=$(grep -E "\"name\": \"$part\"" <<<"$hjson" | sed -n 's/.*"status": "\([A-Z]*\)", "detail": "\(.*\)"}.*/\1 \2/p')
  [ -n "$hr" ] || continue
  for i in "${!ROWS[@]}"; do
    case ${ROWS[$i]} in
      "$part "*PASS*) ROWS[$i]=$(printf '%-14s %-6s %s' "$part" "${hr%% *}" "lumen backends: ${hr#* }") ;;
    esac
  done
done
summary
echo
say "done: lumen $VERSION in $PREFIX"
echo "  CLI:        $PREFIX/bin/lumen (add $PREFIX/bin to PATH)"
echo "  C:          PKG_CONFIG_PATH=$LIBDIR/pkgconfig pkg-config --cflags --libs lumen"
echo "  CMake:      -DCMAKE_PREFIX_PATH=$PREFIX, find_package(lumen), target lumen::lumen"
[ $WITH_PYTHON -eq 1 ] && echo "  Python:     $VENV_PATH/bin/python -c 'import lumen'  (or: source $VENV_PATH/bin/activate)"
[ $WITH_MATLAB -eq 1 ] && echo "  MATLAB/Octave: addpath('$PREFIX/share/lumen/matlab')"
for r in "${ROWS[@]}"; do case $r in "build "*FAIL*|"install "*FAIL*) exit 1 ;; esac; done
exit 0
