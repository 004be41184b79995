"""lumen.gpufit_compat reproduces a pygpufit-style (ROCKETSHIP) call."""
import numpy as np
import pytest

import lumen
import lumen.gpufit_compat as gf

# Gpufit's Tofts example: times in minutes, Cp = 5.5 exp(-0.6 t) from 1 min, trapezoid data.
TX = (np.arange(60) + 1) * 0.25
CP = np.where(TX >= 1.0, 5.5 * np.exp(-0.6 * (TX - 0.25)), 0.0)


def trapz_tofts(K, ve):
    out = np.zeros(TX.size)
    for k in range(TX.size):
        s = 0.0
        for n in range(1, k + 1):
            dt = TX[n] - TX[n - 1]
            s += 0.5 * dt * (CP[n] * np.exp(-K / ve * (TX[k] - TX[n])) + CP[n - 1] * np.exp(-K / ve * (TX[k] - TX[n - 1])))
        out[k] = K * s
    return out


def rocketship_inputs(n=40, seed=0):
    rng = np.random.default_rng(seed)
    K = rng.uniform(0.02, 0.3, n)
    ve = rng.uniform(0.1, 0.6, n)
    data = np.array([trapz_tofts(a, b) for a, b in zip(K, ve)]).astype(np.float32)
    initial = np.tile(np.array([0.01, 0.1], dtype=np.float32), (n, 1))
    constraints = np.tile(np.array([0, 2, 0.02, 1], dtype=np.float32), (n, 1))
    types = np.array([gf.ConstraintType.LOWER_UPPER] * 2, dtype=np.int32)
    user_info = np.concatenate([TX, CP]).astype(np.float32)
    return data, initial, constraints, types, user_info, K, ve


def test_tofts_pygpufit_call():
    data, initial, constraints, types, user_info, K, ve = rocketship_inputs()
    p, states, chi2, iters, secs = gf.fit_constrained(
        data, None, gf.ModelID.TOFTS, initial, constraints=constraints, constraint_types=types,
        tolerance=1e-8, max_number_iterations=200, parameters_to_fit=None,
        estimator_id=gf.EstimatorID.LSE, user_info=user_info)
    assert p.dtype == np.float32 and p.shape == (40, 2)
    assert states.dtype == np.int32 and chi2.dtype == np.float32 and iters.dtype == np.int32
    assert secs > 0
    assert np.all(states == gf.FitState.CONVERGED)
    np.testing.assert_allclose(p[:, 0], K, rtol=2e-3)
    np.testing.assert_allclose(p[:, 1], ve, rtol=2e-3)
    # the same fit through lumen.fit, bit for bit (parameters narrowed to float32 as pygpufit returns)
    res = lumen.fit("tofts", data, TX.astype(np.float32).astype(np.float64),
                    aif=CP.astype(np.float32).astype(np.float64), conv="trapezoid", starts=[0.01, 0.1],
                    bounds=[(0, 2), (np.float32(0.02), 1)], tolerance=1e-8, max_iterations=200,
                    confidence=False)
    assert res.params.astype(np.float32).tobytes() == p.tobytes()
    assert res.states.tobytes() == states.tobytes()
    assert res.iterations.tobytes() == iters.tobytes()


def test_per_fit_initial_parameters_are_honoured():
    data, initial, constraints, types, user_info, K, ve = rocketship_inputs(n=6)
    initial[::2] = [0.2, 0.5]
    p, states, chi2, iters, _ = gf.fit_constrained(data, None, gf.ModelID.TOFTS, initial, constraints, types,
                                                   user_info=user_info, max_number_iterations=200)
    for i in (0, 1):
        p1, s1, c1, it1, _ = gf.fit_constrained(data[i:i + 1].copy(), None, gf.ModelID.TOFTS,
                                                initial[i:i + 1].copy(), constraints[i:i + 1].copy(), types,
                                                user_info=user_info, max_number_iterations=200)
        assert p1.tobytes() == p[i:i + 1].tobytes() and it1[0] == iters[i]


def test_fixed_parameter_and_patlak():
    data, initial, constraints, types, user_info, K, ve = rocketship_inputs(n=4)
    initial[:, 1] = 0.25
    p, *_ = gf.fit_constrained(data, None, gf.ModelID.TOFTS, initial, constraints, types, user_info=user_info,
                               parameters_to_fit=np.array([1, 0], dtype=np.int32))
    assert np.all(p[:, 1] == np.float32(0.25))
    pat = np.outer(np.ones(3), 0.05 * np.cumsum(CP) * 0.25 + 0.02 * CP).astype(np.float32)
    p, states, *_ = gf.fit(pat, None, gf.ModelID.PATLAK, np.tile(np.float32([0.01, 0.01]), (3, 1)),
                           user_info=np.concatenate([TX, CP]).astype(np.float32), max_number_iterations=100)
    assert p.shape == (3, 2) and np.all(np.isfinite(p))


def test_compat_errors():
    data, initial, constraints, types, user_info, K, ve = rocketship_inputs(n=3)
    with pytest.raises(RuntimeError, match="Invalid model ID"):
        gf.fit_constrained(data, None, 5, initial, user_info=user_info)
    with pytest.raises(RuntimeError, match="TISSUE_UPTAKE"):
        gf.fit_constrained(data, None, gf.ModelID.TISSUE_UPTAKE, np.zeros((3, 3), np.float32), user_info=user_info)
    with pytest.raises(RuntimeError, match="LSE"):
        gf.fit_constrained(data, None, gf.ModelID.TOFTS, initial, estimator_id=gf.EstimatorID.MLE, user_info=user_info)
    with pytest.raises(RuntimeError, match="user_info has 7 values"):
        gf.fit_constrained(data, None, gf.ModelID.TOFTS, initial, user_info=np.zeros(7, np.float32))
    with pytest.raises(RuntimeError, match="type of data"):
        gf.fit_constrained(data.astype(np.int32), None, gf.ModelID.TOFTS, initial, user_info=user_info)
    with pytest.raises(RuntimeError, match="Memory layout"):
        gf.fit_constrained(np.asfortranarray(data), None, gf.ModelID.TOFTS, initial, user_info=user_info)
    with pytest.raises(RuntimeError, match="constraints array has invalid shape"):
        gf.fit_constrained(data, None, gf.ModelID.TOFTS, initial, constraints[:, :2].copy(), types,
                           user_info=user_info)
    assert "constraints" in gf.get_last_error()
    assert gf.cuda_available() == lumen.cuda_available()


def test_fit_on_a_constraint_is_converged_as_in_gpufit():
    # ve 0.01 below the constraint 0.02: lumen's state at_bound, reported as Gpufit's 0 converged
    data = trapz_tofts(0.1, 0.01)[None, :].astype(np.float32)
    constraints = np.array([[0, 2, 0.02, 1]], dtype=np.float32)
    types = np.array([gf.ConstraintType.LOWER_UPPER] * 2, dtype=np.int32)
    user_info = np.concatenate([TX, CP]).astype(np.float32)
    p, states, _, _, _ = gf.fit_constrained(data, None, gf.ModelID.TOFTS, np.array([[0.01, 0.1]], np.float32),
                                            constraints, types, user_info=user_info, max_number_iterations=200)
    assert states[0] == gf.FitState.CONVERGED
    assert p[0, 1] == pytest.approx(0.02, abs=1e-7)
    res = lumen.fit("tofts", data, TX, aif=CP, conv="trapezoid", starts=[0.01, 0.1], bounds=[(0, 2), (0.02, 1)])
    assert res.state_names == ["at_bound"] and res.at_bound(0) == {"ve": "lower"}
