#!/usr/bin/env bash
# Installs the Debian packages lumen needs, only those missing; idempotent and non-interactive.
# Runs as root or through sudo. Prints what it installed (or that nothing was missing).
# On a system without apt-get it lists what to install and goes on (the build then reports
# which optional parts are off).
set -euo pipefail
# --demo: only what `make demo` needs (the compiler and the libraries the lumen program links),
# so that a newcomer sees the demo in minutes; `make test` installs the rest.
DEMO_PACKAGES=(gcc make cmake pkg-config zlib1g-dev libnifti2-dev libcjson-dev libpng-dev libxxhash-dev
  libdeflate-dev libgsl-dev libfftw3-dev)
# Build tools and libraries (DESIGN.md "Dependencies"). CUDA is optional and not installed here.
PACKAGES=(
  gcc make cmake pkg-config
  zlib1g-dev libnifti2-dev libcjson-dev libpng-dev libxxhash-dev libdeflate-dev
  libgsl-dev libfftw3-dev
  libcmocka-dev
  python3-numpy python3-scipy python3-skimage   # regenerating tests/golden (scripts/make_filter_golden.py)
  # bindings (issue 8): Debian's numpy (above) and pytest serve /usr/bin/python3 in
  # tests/cli/test_python.sh; python3-venv lets install.sh make its virtual environment;
  # octave + liboctave-dev (mkoctfile) build and test the MEX files in tests/cli/test_octave.sh
  # (about 80 MB download, 265 MB installed)
  python3-pytest python3-venv
  # `pip install .` at the root offline (--no-build-isolation): the setuptools backend and
  # bdist_wheel from Debian (tests/cli/test_pip_install.sh)
  python3-setuptools python3-wheel
  octave liboctave-dev
  # hardening (issue 9): make fuzz builds the libFuzzer targets with clang (-fsanitize=fuzzer
  # needs the compiler-rt runtime package)
  clang libclang-rt-14-dev
  # MPI (issue 7): mpirun -np N lumen dce/batch; tests/cli/test_mpi*.sh
  libopenmpi-dev openmpi-bin
)
# Optional: a failure to install these is reported and the set-up goes on (their tests skip with 77).
#   chromium: tests/cli/test_report_browser.sh renders report.html in a real browser (issue 17)
#   libgdcm-dev: DICOM input (issue 18, docs/DICOM.md; lumen builds without it and says so);
#   python3-pydicom: the DICOM tests' independent reference (tests/cli/test_dicom.sh)
#   libmicrohttpd-dev: lumen view's HTTP server (docs/VIEW.md; lumen builds without it and says so)
#   libgdcm-tools: gdcmconv, the third-party writer of tests/cli/test_dicom_transcoded.sh's files and
#   of scripts/bench_mammo_read.sh's compressed ones (and the files
#   GDCM's CMake config names, which CMake otherwise warns about)
#   pixelmed-apps: PixelMed's Legacy Converted Enhanced writer (Java, headless) for tests/cli/test_dicom_pixelmed.sh
#   python3-nibabel: the independent NIfTI pair writer of tests/cli/test_nifti_pairs.sh
OPTIONAL=(chromium libgdcm-dev libgdcm-tools python3-pydicom libmicrohttpd-dev pixelmed-apps python3-nibabel)

if [ "${1:-}" = "--demo" ]; then
  PACKAGES=("${DEMO_PACKAGES[@]}")
  OPTIONAL=()
fi
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
opt_missing=()
for p in "${OPTIONAL[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    opt_missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ] && [ ${#opt_missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} required and ${#OPTIONAL[@]} optional packages are present"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: apt-get not found; please install: ${missing[*]} ${opt_missing[*]}" >&2
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo -n)
  elif [ ${#missing[@]} -eq 0 ]; then
    echo "setup: optional packages missing (${opt_missing[*]}) and not root: their tests skip" >&2
    exit 0
  else
    echo "setup: missing packages (${missing[*]}) and not root; run as root or install sudo" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]} ${opt_missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# a failed index update is fatal only when a required package is missing
"${SUDO[@]}" apt-get update -qq || [ ${#missing[@]} -eq 0 ]
if [ ${#missing[@]} -gt 0 ]; then
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup: installed ${missing[*]}"
fi
if [ ${#opt_missing[@]} -gt 0 ]; then
  if "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${opt_missing[@]}" >/dev/null; then
    echo "setup: installed ${opt_missing[*]}"
  else  # one by one, so that one unavailable package does not take the others with it
    for p in "${opt_missing[@]}"; do
      if "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$p" >/dev/null; then
        echo "setup: installed $p"
      else
        echo "setup: could not install the optional $p: its tests skip (exit 77)" >&2
      fi
    done
  fi
fi
