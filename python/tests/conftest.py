"""pytest setup for the lumen binding: find the library and the package from the build tree.

LUMEN_LIBRARY (the liblumen.so to test) is taken from the environment, else from LUMEN_BIN's
folder (CTest sets LUMEN_BIN), else build/liblumen.so. The package is imported from python/
unless LUMEN_TEST_INSTALLED=1: then the installed package is tested with the library it loads
by itself (the one inside it) unless LUMEN_LIBRARY is set; LIBFILE (the build's library, the
same code) still serves the C reference program."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
REPO = os.environ.get("LUMEN_SOURCE_DIR") or os.path.dirname(PYDIR)


def _build_dir():
    lib = os.environ.get("LUMEN_LIBRARY")
    if lib:
        return os.path.dirname(os.path.abspath(lib))
    b = os.environ.get("LUMEN_BIN")
    if b:
        return os.path.dirname(os.path.abspath(b))
    return os.path.join(REPO, "build")


BUILD = _build_dir()
LIBFILE = os.environ.get("LUMEN_LIBRARY") or os.path.join(BUILD, "liblumen.so")
os.environ.setdefault("LUMEN_MEDICAL_IMAGE_ARRAYS", "numpy")  # the binding's tests check numpy results
if os.environ.get("LUMEN_TEST_INSTALLED") != "1":
    os.environ["LUMEN_LIBRARY"] = LIBFILE
    sys.path.insert(0, PYDIR)


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


@pytest.fixture(scope="session")
def libfile():
    return LIBFILE


@pytest.fixture(scope="session")
def lumen_bin():
    b = os.environ.get("LUMEN_BIN") or os.path.join(BUILD, "lumen")
    if not os.access(b, os.X_OK):
        pytest.skip("no lumen executable at %s" % b)
    return b


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """Path of fit_reference (the C API's results), compiled against the library under test."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler to build the C reference program")
    libfile = LIBFILE
    libdir = os.path.dirname(os.path.abspath(libfile))
    out = str(tmp_path_factory.mktemp("ref") / "fit_reference")
    cmd = [cc, "-std=c11", "-O1", "-o", out, os.path.join(HERE, "fit_reference.c"),
           "-I", os.path.join(REPO, "include"), os.path.abspath(libfile),
           "-Wl,-rpath," + libdir, "-lm"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0:
        pytest.fail("cannot build fit_reference:\n%s\n%s" % (" ".join(cmd), r.stdout))
    return out
