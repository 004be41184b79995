"""`pip install .` / `pip wheel .` at the repository root: the lumen Python package with liblumen.so
built by our CMake and copied inside it, so `import lumen` needs no environment variable.

The backend is setuptools (pyproject.toml), which Debian ships (python3-setuptools, python3-wheel):
`pip install --no-build-isolation --no-index .` builds offline; a plain `pip install .` fetches
setuptools into pip's isolated build environment. Why not scikit-build-core: docs/BINDINGS.md.

What the build step does: configure the whole project once (tests off, fault-injection hooks off,
MPI off: the shared library never links MPI), build the target `lumen_shared` only, and copy the
library (its real file, as lumen/liblumen.so) into the package. The library's other dependencies
(libgsl, libnifti2, libcjson, libpng, zlib, libgomp) stay system libraries.

Environment switches (docs/BINDINGS.md):
  LUMEN_CUDA=OFF                 no CUDA tier. Unset or ON: CUDA when nvcc is found (CMake decides).
  LUMEN_CMAKE_ARGS="-D..."       more CMake arguments (split as a shell would).
  CMAKE_BUILD_PARALLEL_LEVEL=N   build jobs (default: every core).
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:  # setuptools >= 70.1 has its own; older ones use the wheel package's (Debian bookworm)
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        bdist_wheel = None

ROOT = os.path.dirname(os.path.abspath(__file__))
CMAKE_MIN = (3, 24)  # cmake_minimum_required of CMakeLists.txt


def _fail(message, log=None):
    if log:
        sys.stderr.write(log[-6000:] + "\n")
    raise SystemExit("lumen build: " + message)


def _cmake():
    exe = shutil.which("cmake")
    if not exe:
        _fail("cmake not found: install CMake >= %d.%d (Debian: apt-get install cmake), and the "
              "libraries of scripts/setup.sh" % CMAKE_MIN)
    out = subprocess.run([exe, "--version"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    m = re.search(r"(\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < CMAKE_MIN:
        _fail("%s is %s; lumen needs CMake >= %d.%d" % (exe, out.strip().splitlines()[0], *CMAKE_MIN))
    return exe


def _run(cmd, what):
    sys.stderr.write("lumen build: %s\n" % " ".join(shlex.quote(c) for c in cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0:
        _fail("%s failed (exit %d); its output is above" % (what, r.returncode), r.stdout)
    return r.stdout


def _fresh_build_dir(bdir):
    """A build folder configured from another source tree (a copied checkout) is started afresh."""
    cache = os.path.join(bdir, "CMakeCache.txt")
    if os.path.isfile(cache):
        with open(cache, errors="replace") as f:
            m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", f.read(), re.M)
        if not m or os.path.realpath(m.group(1)) != os.path.realpath(ROOT):
            shutil.rmtree(bdir)
    os.makedirs(bdir, exist_ok=True)


def _driver_present():
    """True when nvidia-smi lists a GPU (an NVIDIA driver is installed and answers)."""
    try:
        return subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def build_liblumen(bdir):
    """Configures and builds liblumen in bdir; returns the path of the library's real file."""
    cmake = _cmake()
    _fresh_build_dir(bdir)
    args = [cmake, "-S", ROOT, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release", "-DLUMEN_TESTS=OFF",
            "-DLUMEN_TEST_HOOKS=OFF", "-DLUMEN_MPI=OFF", "-DLUMEN_WERROR=OFF"]
    # passed every time, so that a kept build folder does not keep an earlier choice. Unset: the
    # CUDA tier only where an NVIDIA driver answers (nvidia-smi -L): compiling every CUDA
    # architecture took most of a 10-minute `pip install .` on machines that cannot run it
    # (issue 43 item 4); LUMEN_CUDA=ON builds it anyway (when nvcc is found), OFF never.
    cuda = os.environ.get("LUMEN_CUDA", "").strip()
    if not cuda:
        cuda = "ON" if _driver_present() else "OFF"
        if cuda == "OFF":
            sys.stderr.write("lumen build: no NVIDIA driver answered (nvidia-smi -L): building without the CUDA "
                             "tier; set LUMEN_CUDA=ON to build it anyway\n")
    if cuda.upper() not in ("ON", "OFF", "1", "0", "TRUE", "FALSE", "YES", "NO"):
        _fail("LUMEN_CUDA=%s: expected OFF (no CUDA tier) or ON (CUDA when nvcc is found)" % cuda)
    args.append("-DLUMEN_CUDA=" + cuda)
    args += shlex.split(os.environ.get("LUMEN_CMAKE_ARGS", ""))
    log = _run(args, "cmake configure")
    summary = [l for l in log.splitlines() if l.startswith("-- lumen ")]
    if summary:
        sys.stderr.write("lumen build: %s\n" % summary[-1][3:])
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    _run([cmake, "--build", bdir, "--target", "lumen_shared", "--parallel", jobs], "cmake --build")
    lib = os.path.join(bdir, "liblumen.so")
    if not os.path.exists(lib):
        _fail("the build finished but %s does not exist" % lib)
    return os.path.realpath(lib)


class BuildPyWithLibrary(build_py):
    """build_py, then liblumen.so built by CMake copied into the package."""

    def run(self):
        super().run()
        build_temp = self.get_finalized_command("build").build_temp
        lib = build_liblumen(os.path.join(os.path.abspath(build_temp), "cmake"))
        dest = os.path.join(self.build_lib, "lumen")
        os.makedirs(dest, exist_ok=True)
        for old in glob.glob(os.path.join(dest, "liblumen*")) + glob.glob(os.path.join(dest, "lumen-dicom-decoder")):
            os.remove(old)
        # one real file: wheels hold no symlinks; ctypes loads it by path (its SONAME is liblumen.so.0)
        shutil.copyfile(lib, os.path.join(dest, "liblumen.so"))
        os.chmod(os.path.join(dest, "liblumen.so"), 0o755)
        # GDCM's decoder module (compressed DICOM), loaded on first use from beside liblumen.so
        # and the helper program that decodes in a process of its own when Python has threads
        # (a malformed file's decoder abort must not end the interpreter)
        for name in ("liblumen_gdcm.so", "lumen-dicom-decoder"):
            path = os.path.join(os.path.dirname(lib), name)
            if os.path.exists(path):
                shutil.copyfile(path, os.path.join(dest, name))
                os.chmod(os.path.join(dest, name), 0o755)


cmdclass = {"build_py": BuildPyWithLibrary}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """The wheel holds a native library but no Python extension: py3-none-<platform>."""

        def get_tag(self):
            return ("py3", "none") + tuple(super().get_tag()[2:])

    cmdclass["bdist_wheel"] = PlatformWheel

class BinaryDistribution(Distribution):
    """Holds a native library: installed to platlib, and the wheel is not pure."""

    def has_ext_modules(self):
        return True


# build/ is the Makefile's CMake folder: keep setuptools' files out of it
setup(cmdclass=cmdclass, distclass=BinaryDistribution, options={"build": {"build_base": "build-python"}})
