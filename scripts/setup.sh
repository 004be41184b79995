#!/usr/bin/env bash
# Installs the Debian packages lumen needs, only those missing; idempotent and non-interactive.
# Runs as root or through sudo. Prints what it installed (or that nothing was missing).
# On a system without apt-get it lists what to install and goes on (the build then reports
# which optional parts are off).
set -euo pipefail

# Build tools and libraries (DESIGN.md "Dependencies"). CUDA is optional and not installed here.
PACKAGES=(
  gcc make cmake pkg-config
  zlib1g-dev libnifti2-dev libcjson-dev libpng-dev
  libgsl-dev libfftw3-dev
  libcmocka-dev
  python3-numpy python3-scipy python3-skimage   # regenerating tests/golden (scripts/make_filter_golden.py)
  # bindings (issue 8): Debian's numpy (above) and pytest serve /usr/bin/python3 in
  # tests/cli/test_python.sh; python3-venv lets install.sh make its virtual environment;
  # octave + liboctave-dev (mkoctfile) build and test the MEX files in tests/cli/test_octave.sh
  # (about 80 MB download, 265 MB installed)
  python3-pytest python3-venv
  octave liboctave-dev
  # hardening (issue 9): make fuzz builds the libFuzzer targets with clang (-fsanitize=fuzzer
  # needs the compiler-rt runtime package)
  clang libclang-rt-14-dev
  # MPI (issue 7): mpirun -np N lumen dce/batch; tests/cli/test_mpi*.sh
  libopenmpi-dev openmpi-bin
  # the report in a browser (issue 17): tests/cli/test_report_browser.sh renders report.html
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} required packages are present"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: apt-get not found; please install: ${missing[*]}" >&2
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo -n)
  else
    echo "setup: missing packages (${missing[*]}) and not root; run as root or install sudo" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: installed ${missing[*]}"
