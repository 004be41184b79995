"""cuda_available, backends (the health rows), devices, DeviceContext, gpu_safe, loading."""
import logging
import os
import shutil
import subprocess
import sys
import warnings

import pytest

import lumen


def test_library_is_the_one_under_test():
    env = os.environ.get("LUMEN_LIBRARY")
    if env:  # LUMEN_LIBRARY wins over a library inside the package
        assert lumen.library_source() == "LUMEN_LIBRARY"
        assert os.path.realpath(lumen.library_path()) == os.path.realpath(env)
    else:    # an installed package without LUMEN_LIBRARY loads the library inside it
        assert lumen.library_source() == "beside the package"
        assert os.path.dirname(lumen.library_path()) == os.path.dirname(lumen.__file__)
    assert lumen.version().count(".") == 2
    assert lumen.build_info()


def test_cuda_available_matches_the_build():
    avail, count, reason = lumen.cuda_probe()
    assert lumen.cuda_available() is avail
    if not lumen.cuda_built():
        assert lumen.cuda_available() is False
        assert count == 0 and "CUDA" in reason
    if os.environ.get("LUMEN_EXPECT_CUDA") == "1":
        assert lumen.cuda_available() is True and count >= 1


def test_backends_are_the_health_rows(lumen_bin):
    rows = lumen.backends()
    names = [r["name"] for r in rows]
    assert "cpu" in names and "cuda-build" in names
    assert all(r["status"] in ("PASS", "FAIL", "SKIP") and r["detail"] for r in rows)
    cpu = rows[names.index("cpu")]
    assert cpu["status"] == "PASS"
    # the CLI prints the same rows (and adds its own)
    out = subprocess.run([lumen_bin, "backends"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    for r in rows:
        line = [l for l in out.splitlines() if l.split()[:1] == [r["name"]]]
        assert line, r["name"]
        assert line[0].split()[1] == r["status"]
    cuda = rows[names.index("cuda-build")]
    assert (cuda["status"] == "PASS") == lumen.cuda_built()


def test_devices_and_memory():
    devs = lumen.devices()
    assert devs[0]["device"] == "cpu" and devs[0]["memory_total"] > 0
    m = lumen.memory_stats("cpu")
    assert set(m) == {"device", "allocated", "free", "total"} and m["total"] >= m["free"] > 0
    assert len(devs) - 1 == lumen.cuda_probe()[1]


def test_device_context_cpu_and_fallback():
    with lumen.DeviceContext("cpu") as d:
        s = d.memory_stats()
        assert d.device == "cpu" and not d.fell_back and s["total"] > 0
        d.release_cache()
    if lumen.cuda_available():
        with lumen.DeviceContext("cuda:0") as d:
            assert d.device == "cuda:0" and d.memory_stats()["total"] > 0
    else:
        with pytest.warns(RuntimeWarning, match="cuda:0 is not usable"):
            with lumen.DeviceContext("cuda:0") as d:
                assert d.device == "cpu" and d.fell_back
                assert d.memory_stats()["device"] == "cpu"
        with pytest.raises(lumen.LumenDeviceError) as e:
            lumen.DeviceContext("cuda:0", fallback=None)
        assert e.value.status_name in ("not_built", "no_device") and "CUDA" in e.value.message
    with pytest.raises(lumen.LumenInvalidArgument, match="gpu7"):
        lumen.DeviceContext("gpu7")
    d = lumen.DeviceContext("cpu")
    d.close()
    with pytest.raises(ValueError, match="closed"):
        d.memory_stats()


def test_gpu_safe_reruns_on_the_cpu():
    calls = []

    @lumen.gpu_safe
    def op(x, device="cuda:0"):
        calls.append(device)
        with lumen.DeviceContext(device, fallback=None) as d:   # raises without a usable GPU
            return x * 2, d.device

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, used = op(21, device="cuda:0")
    assert value == 42
    if lumen.cuda_available():
        assert calls == ["cuda:0"] and used == "cuda:0"
    else:
        assert calls == ["cuda:0", "cpu"] and used == "cpu"
    assert op.gpu_safe and op.__name__ == "op"

    @lumen.gpu_safe(fallback="cpu")
    def bad(device="cpu"):
        raise lumen.LumenError(lumen.statuses().index("invalid_argument"), "bad argument")

    with pytest.raises(lumen.LumenError, match="bad argument"):
        bad(device="cuda:0")          # not a device error: not retried


def test_lumen_library_wins_over_the_library_inside_the_package(tmp_path, libfile):
    pkg = tmp_path / "site"
    shutil.copytree(os.path.dirname(lumen.__file__), str(pkg / "lumen"),
                    ignore=shutil.ignore_patterns("liblumen*", "__pycache__"))
    shutil.copyfile(libfile, str(pkg / "lumen" / "liblumen.so"))
    code = "import sys; sys.path.insert(0, %r); import lumen; print(lumen.library_source()); " \
           "print(lumen.library_path())" % str(pkg)
    env = {k: v for k, v in os.environ.items() if k != "LUMEN_LIBRARY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout.splitlines()
    assert out == ["beside the package", str(pkg / "lumen" / "liblumen.so")]
    env["LUMEN_LIBRARY"] = libfile
    out = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout.splitlines()
    assert out == ["LUMEN_LIBRARY", libfile]


def test_missing_library_is_a_clear_import_error(tmp_path):
    env = dict(os.environ, LUMEN_LIBRARY=str(tmp_path / "nope.so"), LD_LIBRARY_PATH="")
    code = "import sys; sys.path.insert(0, %r); import lumen" % os.path.dirname(os.path.dirname(lumen.__file__))
    r = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    assert r.returncode != 0, "a wrong LUMEN_LIBRARY must fail, never fall back to another library"
    assert "cannot load the shared library" in r.stderr and "LUMEN_LIBRARY" in r.stderr


def test_cuda_probe_logs_once_below_error(caplog):
    # a machine without a GPU is normal: no ERROR record, and the reason at most once (INFO)
    import lumen._device as dev
    dev._probe_logged = False
    with caplog.at_level(logging.DEBUG, logger="lumen"):
        first = lumen.cuda_available()
        second = lumen.cuda_available()
    assert first is second
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    probes = [r for r in caplog.records if "CUDA not available" in r.getMessage()]
    assert len(probes) == (0 if first else 1), caplog.text
    assert all(r.levelno == logging.INFO for r in probes)
