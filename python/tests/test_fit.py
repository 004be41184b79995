"""lumen.fit / lumen.FitPlan against the C API (bit for bit), the CLI and analytic curves."""
import ctypes
import os
import subprocess
import threading

import numpy as np
import pytest

import lumen
from lumen import _lib

T = np.arange(61) * 0.1          # minutes
CP = T.copy()                    # ramp AIF: Tofts has a closed form, exact under conv="exact"


def tofts(K, ve, t=T):
    k = K / ve
    return K * (t / k - (1 - np.exp(-k * t)) / (k * k))


def noisy_tofts(n, seed=1):
    rng = np.random.default_rng(seed)
    K = rng.uniform(0.02, 0.4, n)
    ve = rng.uniform(0.1, 0.6, n)
    clean = np.array([tofts(a, b) for a, b in zip(K, ve)])
    return clean + rng.normal(0, 0.01, clean.shape), K, ve


def run_reference(ref, tmp_path, model, x, cp, data, kind, backend="auto", conv="exact", tr=None,
                  starts=None, bounds=None, fixed=None):
    d = str(tmp_path)
    np.asarray(x, np.float64).tofile(os.path.join(d, "x.bin"))
    cpf = "-"
    if cp is not None:
        cpf = os.path.join(d, "cp.bin")
        np.asarray(cp, np.float64).tofile(cpf)
    np.asarray(data, np.float64).tofile(os.path.join(d, "data.bin"))
    out = os.path.join(d, "out")
    args = [ref, model, str(data.shape[1]), str(data.shape[0]), os.path.join(d, "x.bin"), cpf,
            os.path.join(d, "data.bin"), kind, backend, conv, out]
    if tr is not None or starts or bounds or fixed:
        args.append(repr(tr or 0.0))
        args.append(",".join(repr(float(s)) for s in starts) if starts else "-")
        args.append(",".join("%r:%r" % (float(a), float(b)) for a, b in bounds) if bounds else "-")
        if fixed:
            args.append(",".join(str(int(f)) for f in fixed))
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, r.stderr
    rd = lambda ext, dt: np.fromfile(out + "." + ext, dtype=dt)
    n = data.shape[0]
    return {"params": rd("params", np.float64).reshape(n, -1), "derived": rd("derived", np.float64).reshape(n, -1),
            "chi2": rd("chi2", np.float64), "r2": rd("r2", np.float64), "ci_lo": rd("cilo", np.float64).reshape(n, -1),
            "ci_hi": rd("cihi", np.float64).reshape(n, -1), "states": rd("state", np.int32),
            "iterations": rd("iter", np.int32), "backend_used": r.stdout.split()[0]}


def assert_same(res, ref):
    for k in ("params", "derived", "chi2", "r2", "ci_lo", "ci_hi", "states", "iterations"):
        a, b = np.asarray(res[k]), ref[k]
        assert a.shape == b.shape, k
        # bit for bit: compare the bytes (NaN payloads included)
        assert a.tobytes() == b.tobytes(), "%s differs from the C API: %s vs %s" % (k, a[:3], b[:3])
    assert res.backend_used == ref["backend_used"]


# ---------------------------------------------------------------------------- enums from C


def test_enums_are_read_from_the_library():
    lib = _lib.lib
    names = lumen.models()
    assert "tofts" in names and "2cxm" in names and "vfa" in names
    for i, name in enumerate(names):
        m = ctypes.c_int()
        assert lib.lumen_model_parse(name.encode(), ctypes.byref(m)) == 0
        assert m.value == i
    assert lib.lumen_model_name(len(names)).decode() == "unknown"
    states = lumen.fit_states()
    assert states[0] == "converged" and "max_iterations" in states
    assert lib.lumen_fit_state_name(len(states)).decode() == "unknown"
    assert lumen.fit_tiers() == ["cuda", "cpu", "cpu_single", "standard"]
    assert lumen.statuses()[0] == "ok" and "invalid_argument" in lumen.statuses()


def test_model_info():
    info = lumen.model_info("2cxm")
    assert [p["name"] for p in info["params"]] == ["Ktrans", "ve", "vp", "Fp"]
    assert info["fit_params"][0] == "E"
    tofts_info = lumen.model_info("tofts")
    assert tofts_info["params"][0]["unit"] == "1/min"
    assert [d["name"] for d in tofts_info["derived"]] == ["kep"]


def test_model_flags_choose_the_grid_units():
    # the x-value kind of a model comes from its row's LUMEN_MF_* flags (lumen_model_flags_of)
    from lumen import _fit
    assert _fit._model_flags("tofts") & _fit._MF_AIF and _fit._model_flags("auc") & _fit._MF_AIF
    for m in ("vfa", "vfa-linear", "vfa-2pt"):
        assert _fit._model_flags(m) & _fit._MF_X_FLIP and not _fit._model_flags(m) & _fit._MF_AIF
    for m in ("ir", "sr"):
        f = _fit._model_flags(m)
        assert f & _fit._MF_X_TIMES and not f & (_fit._MF_AIF | _fit._MF_X_FLIP)
    assert _fit._model_flags("bogus") == 0
    x = np.array([0.1, 0.5, 2.0])
    assert np.array_equal(_fit._grid_in_lumen_units("ir", x, None, None), x)  # seconds, unconverted
    assert np.allclose(_fit._grid_in_lumen_units("vfa", np.array([2.0, 10.0]), None, "deg"), np.deg2rad([2, 10]))
    with pytest.raises(ValueError, match="times are seconds"):
        _fit._grid_in_lumen_units("sr", x, "min", None)


def test_parse_backend_aliases():
    assert lumen.parse_backend("gpufit") == "accelerated"
    assert lumen.parse_backend("pure_cpu") == "standard"
    assert lumen.parse_backend("cpu", rocketship_names=True) == "standard"
    with pytest.raises(lumen.LumenInvalidArgument):
        lumen.parse_backend("warp-drive")


# ---------------------------------------------------------------------------- analytic answers


def test_tofts_analytic_curves():
    data = np.array([tofts(0.2, 0.4), tofts(0.05, 0.1)])
    res = lumen.fit("tofts", data, T, aif=CP)
    assert res.params.shape == (2, 2) and res.param_names == ["Ktrans", "ve"]
    np.testing.assert_allclose(res.params, [[0.2, 0.4], [0.05, 0.1]], rtol=1e-4)
    np.testing.assert_allclose(res["kep"], [0.5, 0.5], rtol=1e-4)
    assert res.states.dtype == np.int32 and list(res.states) == [0, 0]
    assert res.state_names == ["converged", "converged"]
    assert np.all(res.ci_lo <= res.params) and np.all(res.params <= res.ci_hi)
    assert res.iterations.dtype == np.int32 and res.chi2.shape == (2,)
    assert res.backend_requested == "auto" and res.backend_used
    assert sum(res.curves_per_tier.values()) == 2 and res.state_counts["converged"] == 2
    np.testing.assert_array_equal(res["Ktrans"], res.params[:, 0])
    assert "Ktrans" in res and set(res.as_dict()) >= {"params", "states", "chi2", "iterations", "ci_lo"}


def test_standard_tier_and_fixed_parameter():
    data = np.array([tofts(0.2, 0.4)])
    res = lumen.fit("tofts", data, T, aif=CP, backend="standard")
    assert res.backend_used == "standard"
    np.testing.assert_allclose(res.params[0], [0.2, 0.4], rtol=1e-6)
    res = lumen.fit("tofts", data, T, aif=CP, fixed={"ve": 0.4})
    assert res.params[0, 1] == 0.4


def test_vfa_t1():
    fa = np.deg2rad([2, 5, 10, 15, 20, 30])
    E = np.exp(-0.005 / 1.2)
    s = 1000 * np.sin(fa) * (1 - E) / (1 - np.cos(fa) * E)
    res = lumen.fit("vfa", s[None, :], fa, tr=0.005)
    np.testing.assert_allclose(res.params[0], [1.2, 1000], rtol=1e-4)


def test_population_aif_name():
    t = np.arange(80) / 12.0
    res = lumen.fit("patlak", np.full((1, 80), 0.1), t, aif="parker", hematocrit=0.42, aif_delay=1.0)
    assert res.params.shape == (1, 2)
    cp = lumen.population_aif("parker", t, hematocrit=0.42, delay=1.0)
    assert cp.shape == (80,) and cp[0] == 0.0 and cp.max() > 1


def test_fxr_per_curve_constants():
    t = T
    data = np.array([tofts(0.1, 0.3)]) * 4.5 + 1.0   # R1(t) = R10 + r1 C, fast exchange
    data = np.vstack([data, data + 0.5])
    res = lumen.fit("fxr", data, t, aif=CP, r10=[1.0, 1.5])
    res2 = lumen.fit("fxr", data, t, aif=CP, consts=np.array([[1.0, 1.0], [1.5, 1.0]]))
    assert res.params.tobytes() == res2.params.tobytes()
    with pytest.raises(ValueError, match="consts"):
        lumen.fit("fxr", data, t, aif=CP, consts=np.ones((2, 3)))
    with pytest.raises(TypeError, match="consts"):
        lumen.fit("fxr", data, t, aif=CP, consts=np.ones((2, 2), dtype=np.float32))


# ---------------------------------------------------------------------------- bit for bit vs C


@pytest.mark.parametrize("kind,backend", [("f64", "auto"), ("f32", "auto"), ("f64", "cpu_single"),
                                          ("f32", "standard")])
def test_tofts_equals_c_api_bit_for_bit(reference, tmp_path, kind, backend):
    data, _, _ = noisy_tofts(300)
    ref = run_reference(reference, tmp_path, "tofts", T, CP, data, kind, backend=backend)
    d = data.astype(np.float32) if kind == "f32" else data
    res = lumen.fit("tofts", d, T, aif=CP, backend=backend)
    assert_same(res, ref)


def test_etofts_trapezoid_with_options_equals_c_api(reference, tmp_path):
    data, _, _ = noisy_tofts(100, seed=3)
    starts, bounds, fixed = [0.1, 0.3, 0.02], [(0, 1), (0.01, 1), (0, 0.5)], [0, 0, 0]
    ref = run_reference(reference, tmp_path, "etofts", T, CP, data, "f64", conv="trapezoid",
                        starts=starts, bounds=bounds, fixed=fixed)
    res = lumen.fit("etofts", data, T, aif=CP, conv="trapezoid", starts=starts, bounds=bounds)
    assert_same(res, ref)


def test_vfa_equals_c_api(reference, tmp_path):
    fa = np.deg2rad([2, 5, 10, 15, 20, 30])
    rng = np.random.default_rng(7)
    T1 = rng.uniform(0.3, 3, 50)
    E = np.exp(-0.005 / T1)[:, None]
    s = 1000 * np.sin(fa) * (1 - E) / (1 - np.cos(fa) * E) + rng.normal(0, 2, (50, 6))
    ref = run_reference(reference, tmp_path, "vfa", fa, None, s, "f64", tr=0.005)
    res = lumen.fit("vfa", s, fa, tr=0.005)
    assert_same(res, ref)


def test_plan_reuse_and_threads_give_identical_results():
    data, _, _ = noisy_tofts(200, seed=5)
    with lumen.FitPlan("tofts", T, CP) as plan:
        assert plan.backend_requested == "auto" and plan.backend_selected
        first = plan.execute(data)
        out = [None] * 4

        def work(i):
            out[i] = plan.execute(data)

        th = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in th:
            t.start()
        for t in th:
            t.join()
    for r in out:
        assert r.params.tobytes() == first.params.tobytes()
        assert r.states.tobytes() == first.states.tobytes()


def test_matches_cli(lumen_bin, tmp_path):
    data, _, _ = noisy_tofts(20, seed=11)
    np.savetxt(tmp_path / "times.txt", T * 60)     # the CLI reads seconds by default
    np.savetxt(tmp_path / "aif.txt", CP)
    np.savetxt(tmp_path / "curves.txt", data, delimiter=",", fmt="%.17g")
    r = subprocess.run([lumen_bin, "fit", "--model", "tofts", "--times", "times.txt", "--aif", "aif.txt",
                        "--curves", "curves.txt", "--out", "fit.csv", "-q"], cwd=str(tmp_path),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, r.stderr
    cli = np.genfromtxt(tmp_path / "fit.csv", delimiter=",", names=True)
    res = lumen.fit("tofts", data, T, aif=CP)
    np.testing.assert_allclose(res["Ktrans"], cli["Ktrans"], rtol=2e-8)   # the CSV holds %.9g
    np.testing.assert_allclose(res["ve"], cli["ve"], rtol=2e-8)
    np.testing.assert_array_equal(res.states, cli["state"].astype(int))
    np.testing.assert_array_equal(res.iterations, cli["iterations"].astype(int))


# ---------------------------------------------------------------------------- errors


def test_wrong_dtype_shape_and_layout_are_clear():
    data = np.array([tofts(0.2, 0.4)] * 3)
    with pytest.raises(TypeError, match="float32 or float64"):
        lumen.fit("tofts", data.astype(np.int32), T, aif=CP)
    with pytest.raises(TypeError, match="float32 or float64"):
        lumen.fit("tofts", data.astype(np.complex128), T, aif=CP)
    with pytest.raises(ValueError, match=r"2-D array.*data\[None, :\]"):
        lumen.fit("tofts", data[0], T, aif=CP)
    with pytest.raises(ValueError, match="2-D"):
        lumen.fit("tofts", data[None], T, aif=CP)
    with pytest.raises(ValueError, match="C-contiguous"):
        lumen.fit("tofts", np.asfortranarray(data), T, aif=CP)
    with pytest.raises(ValueError, match="C-contiguous"):
        lumen.fit("tofts", np.repeat(data, 2, axis=1)[:, ::2], T, aif=CP)
    with pytest.raises(ValueError, match="61 samples"):
        lumen.fit("tofts", data[:, :50], T, aif=CP)
    with pytest.raises(ValueError, match="aif: expected 61 values"):
        lumen.fit("tofts", data, T, aif=CP[:60])
    with pytest.raises(ValueError, match="unknown parameter 'Kt'"):
        lumen.fit("tofts", data, T, aif=CP, starts={"Kt": 0.1})
    with pytest.raises(ValueError, match="precision"):
        lumen.fit("tofts", data, T, aif=CP, precision="float16")


def test_c_messages_are_carried():
    data = np.array([tofts(0.2, 0.4)])
    with pytest.raises(lumen.LumenInvalidArgument) as e:
        lumen.fit("gauss", data, T, aif=CP)
    assert "gauss" in str(e.value) and "tofts" in str(e.value)
    with pytest.raises(lumen.LumenError) as e:
        lumen.fit("tofts", data, T, aif=CP, starts={"ve": 2.0}, bounds={"ve": (0.1, 1.0)})
    assert e.value.status_name == "invalid_argument"
    assert "start of ve is 2, outside its bounds" in e.value.message
    assert isinstance(e.value, ValueError)
    with pytest.raises(lumen.LumenError, match="tolerance"):
        lumen.fit("tofts", data, T, aif=CP, tolerance=-1)
    with pytest.raises(lumen.LumenError) as e:
        lumen.fit("tofts", data, T, aif=CP, backend="warp-drive")
    assert "warp-drive" in e.value.message
    bad_t = T.copy()
    bad_t[5] = np.nan
    with pytest.raises(lumen.LumenError, match=r"x\[5\] is not finite"):
        lumen.fit("tofts", data, bad_t, aif=CP)


def test_per_curve_problems_are_states_not_errors():
    data = np.array([tofts(0.2, 0.4), np.full(61, np.nan), np.zeros(61)])
    res = lumen.fit("tofts", data, T, aif=CP)
    assert res.states[0] == 0
    assert res.state_names[1] == "invalid_input"
    assert np.all(np.isnan(res.params[1]))


# ---------------------------------------------------------------------------- bounds presets, at_bound, units


def test_bounds_presets_and_at_bound():
    assert lumen.bounds_presets() == ["physical", "rocketship"]
    assert "at_bound" in lumen.fit_states()
    box = lambda info: {p["name"]: (p["lo"], p["hi"]) for p in info["params"]}
    assert box(lumen.model_info("etofts")) == {"Ktrans": (0.0, 5.0), "ve": (1e-4, 1.0), "vp": (0.0, 1.0)}
    assert box(lumen.model_info("etofts", bounds_preset="rocketship")) == {
        "Ktrans": (1e-7, 2.0), "ve": (0.02, 1.0), "vp": (0.001, 1.0)}
    data = np.array([tofts(0.1, 0.01), tofts(0.2, 0.4)])
    # ROCKETSHIP's ve >= 0.02 pins the first curve: at_bound, its values kept
    res = lumen.fit("tofts", data, T, aif=CP, bounds_preset="rocketship")
    assert res.bounds_preset == "rocketship"
    assert res.state_names == ["at_bound", "converged"]
    assert res.params[0, 1] == pytest.approx(0.02, abs=1e-7)
    assert np.all(np.isfinite(res.params)) and np.all(np.isfinite(res.chi2)) and np.all(np.isfinite(res.ci_lo))
    assert res.has_values.tolist() == [True, True]
    assert res.bound_mask.tolist() == [4, 0]
    assert res.at_bound(0) == {"ve": "lower"} and res.at_bound(1) == {}
    assert res.at_lower == {"Ktrans": 0, "ve": 1} and res.at_upper == {"Ktrans": 0, "ve": 0}
    assert res.state_counts["at_bound"] == 1
    # the physical default recovers it; an explicit bound overrides the preset
    res = lumen.fit("tofts", data, T, aif=CP)
    assert res.bounds_preset == "physical" and res.state_names == ["converged", "converged"]
    np.testing.assert_allclose(res.params, [[0.1, 0.01], [0.2, 0.4]], rtol=1e-3)
    res = lumen.fit("tofts", data, T, aif=CP, bounds_preset="rocketship", bounds={"ve": (0.001, None)})
    assert res.state_names == ["converged", "converged"]
    np.testing.assert_allclose(res.params[0], [0.1, 0.01], rtol=1e-3)
    with pytest.raises(ValueError, match="bounds_preset 'gpufit'"):
        lumen.fit("tofts", data, T, aif=CP, bounds_preset="gpufit")


def test_units_are_checked():
    s = np.ones((1, 4))
    # flip angles in degrees without angle_unit: refused by the binding (issue 39 item 3) ...
    with pytest.raises(ValueError, match=r"go up to 15: radians above pi/2 \(90 deg\) are implausible for VFA; "
                                         r"degrees\? pass angle_unit='deg'"):
        lumen.fit("vfa", s, [3, 6, 9, 15])
    # ... and by the C library when the caller insists they are radians
    with pytest.raises(lumen.LumenInvalidArgument,
                       match=r"flip angle x\[1\] = 6 is above pi: flip angles are in radians; "
                             r"degrees\? 6 deg = 0.105 rad"):
        lumen.fit("vfa", s, [3, 6, 9, 15], angle_unit="rad")
    with pytest.raises(ValueError, match=r"tr 5 s is not an SPGR TR \(expected 0.0005..0.1 s\); in ms\? give 0.005"):
        lumen.fit("vfa-linear", s, np.deg2rad([3, 6, 9, 15]), tr=5)
    with pytest.raises(ValueError, match=r"r1 270 is not a gadolinium relaxivity .*in 1/\(mM min\)\? give 4.5"):
        lumen.fit("fxr", np.ones((1, T.size)), T, aif=CP, r1=270)
    # DCE times are minutes: a grid in seconds (QIBA v6: 0..660 s) without time_unit is refused ...
    t_s = np.arange(1321) * 0.5
    with pytest.raises(ValueError, match=r"the DCE times span 660; lumen's unit is minutes, which makes this a 11.0-h "
                                         r"acquisition. In seconds\? pass time_unit='s' \(lumen converts: 11 min\)"):
        lumen.fit("tofts", np.ones((1, t_s.size)), t_s, aif=np.ones(t_s.size))
    # ... and so is a 3-min acquisition sampled every 3 s (180 "minutes": under the C library's 240-min limit)
    with pytest.raises(ValueError, match=r"the DCE times span 180; .*time_unit='s'"):
        lumen.fit("tofts", np.ones((1, 61)), np.arange(61) * 3.0, aif=np.ones(61))
    # said to be minutes, the C library's limit still holds
    with pytest.raises(ValueError, match=r"the times span 660 min \(11.0 h\), implausible for one DCE acquisition .*"
                                         r"in seconds\? divide them by 60 \(11 min\)"):
        lumen.fit("tofts", np.ones((1, t_s.size)), t_s, aif=np.ones(t_s.size), time_unit="min")
    with pytest.raises(ValueError, match=r"time_unit: 'hours' is not a unit here"):
        lumen.fit("tofts", np.ones((1, T.size)), T, aif=CP, time_unit="hours")
    with pytest.raises(ValueError, match=r"angle_unit: model 'tofts' takes times"):
        lumen.fit("tofts", np.ones((1, T.size)), T, aif=CP, angle_unit="deg")
    with pytest.raises(ValueError, match=r"time_unit: model 'vfa' takes flip angles"):
        lumen.fit("vfa", s, np.deg2rad([3, 6, 9, 15]), time_unit="s")


def test_explicit_units_give_the_same_fit():
    """Seconds with time_unit='s' and degrees with angle_unit='deg' fit exactly as minutes and
    radians: the binding converts, the C library sees its own units."""
    kt, kep = 0.2, 0.5
    y = (kt * (T / kep - (1 - np.exp(-kep * T)) / kep ** 2))[None, :]
    a = lumen.fit("tofts", y, T, aif=CP, backend="cpu")
    b = lumen.fit("tofts", y, T * 60.0, aif=CP, backend="cpu", time_unit="s")
    np.testing.assert_allclose(b.params, a.params, rtol=1e-12, atol=0)
    assert abs(a.params[0, 0] - 0.2) < 1e-4 and abs(a.params[0, 1] - 0.4) < 1e-4
    fa = np.array([3.0, 6.0, 9.0, 15.0])
    t1, m0, tr = 1.2, 1000.0, 0.005
    e1 = np.exp(-tr / t1)
    r = np.deg2rad(fa)
    sig = (m0 * np.sin(r) * (1 - e1) / (1 - np.cos(r) * e1))[None, :]
    c = lumen.fit("vfa", sig, r, tr=tr, backend="cpu")
    d = lumen.fit("vfa", sig, fa, tr=tr, backend="cpu", angle_unit="deg")
    np.testing.assert_allclose(d.params, c.params, rtol=1e-12, atol=0)
    assert abs(c.params[0, 0] - t1) < 1e-3 * t1
