#!/usr/bin/env python3
"""A prototype of 2CXM by variable projection (issue 43, the next step after the grid start),
run on bench_cxm_starts' curves to count its iterations against lumen's LM and compare its chi2
with the standard tier's. Not lumen code: numpy, one curve at a time, no bounds on (E, ve, vp,
Fp) (only K+ > K- and K within [1e-5, 2e4] /min), finite-difference derivatives.

Ct = a G(K+) + b G(K-) is linear in (a, b); for theta = (log K+, log K-) the residual
r(theta) = (I - P) y, P the projection onto span(G+, G-); Levenberg-Marquardt on theta with
Kaufman's Jacobian J_k = -(I - P) dPhi/dtheta_k (a, b), started from the best pair of a grid of
K (0.005-500 /min, 5 per decade), stopping like lumen's LM (a step with lambda <= 1 changing chi2
by less than 1e-6 chi2).

    bench_cxm_starts --curves 4000 --dump /tmp/cxm.bin
    /usr/bin/python3 bench/cxm_vp_probe.py /tmp/cxm.bin [--curves M] [--slow]

--slow takes the curves on which lumen took more than 40 iterations."""
import sys
import numpy as np


def load(path):
    raw = open(path, "rb").read()
    n, nc = np.frombuffer(raw[:8], dtype=np.int32)
    o = 8
    x = np.frombuffer(raw[o:o + 8 * n]); o += 8 * n
    cp = np.frombuffer(raw[o:o + 8 * n]); o += 8 * n
    y = np.frombuffer(raw[o:o + 4 * n * nc], dtype=np.float32).reshape(nc, n).astype(float); o += 4 * n * nc
    rec = np.frombuffer(raw[o:], dtype=np.dtype([("it", "<i4"), ("chi2", "<f8"), ("chi2_std", "<f8")]))
    return x, cp, y, rec


def conv(x, cp, k):
    """exp(-k t) convolved with cp, cp linear between samples (lumen's exact recursion)."""
    n = len(x)
    out = np.zeros(n)
    for i in range(1, n):
        dt = x[i] - x[i - 1]
        z = k * dt
        em = np.expm1(-z)
        g, f = -em / z, (z + em) / z ** 2
        out[i] = (1 + em) * out[i - 1] + dt * (g - f) * cp[i - 1] + dt * f * cp[i]
    return out


def fit_vp(x, cp, y, grid, gram, tol=1e-6, maxit=200):
    c = grid @ y
    ks = 0.005 * 10 ** (np.arange(len(grid)) / 5.0)
    best = None
    for i in range(len(ks)):
        for j in range(i + 1, len(ks)):
            a = np.array([[gram[j, j], gram[i, j]], [gram[i, j], gram[i, i]]])
            if np.linalg.det(a) <= 1e-12 * a[0, 0] * a[1, 1]:
                continue
            ab = np.linalg.solve(a, [c[j], c[i]])
            if ab.min() > 0 and (best is None or ab @ [c[j], c[i]] > best[0]):
                best = (ab @ [c[j], c[i]], i, j)
    th = np.log([ks[best[2]], ks[best[1]]])

    def phi(t):
        return np.stack([conv(x, cp, np.exp(t[0])), conv(x, cp, np.exp(t[1]))], 1)

    def ev(t):
        p = phi(t)
        ab = np.linalg.lstsq(p, y, rcond=None)[0]
        return p, ab, y - p @ ab

    p, ab, r = ev(th)
    chi, lam, it = r @ r, 1e-3, 0
    while it < maxit:
        it += 1
        q = np.linalg.qr(p)[0]
        jac = np.zeros((len(y), 2))
        for k in range(2):
            e = np.zeros(2); e[k] = 1e-6
            v = (phi(th + e) - phi(th - e)) / 2e-6 @ ab
            jac[:, k] = -(v - q @ (q.T @ v))
        a, g = jac.T @ jac, jac.T @ r
        while True:
            t2 = th + np.linalg.solve(a + lam * np.diag(np.diag(a)), -g)
            if t2[0] <= t2[1] or t2[0] > np.log(2e4) or t2[1] < np.log(1e-5):
                lam *= 10
            else:
                p2, ab2, r2 = ev(t2)
                if r2 @ r2 < chi:
                    done = chi - r2 @ r2 < tol * chi and lam <= 1
                    th, p, ab, r, chi = t2, p2, ab2, r2, r2 @ r2
                    lam *= 0.1
                    if done:
                        return it, chi, ab
                    break
                lam *= 10
            if lam > 1e10:
                return it, chi, ab
    return it, chi, ab


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    x, cp, y, rec = load(args[0])
    m = int(args[args.index("--curves") + 1]) if "--curves" in args else 300
    sel = [i for i in range(len(y)) if rec["it"][i] > 40] if "--slow" in args else list(range(len(y)))
    sel = sel[:m]
    grid = np.array([conv(x, cp, 0.005 * 10 ** (j / 5.0)) for j in range(26)])
    gram = grid @ grid.T
    its, rel, neg = [], [], 0
    for i in sel:
        it, chi, ab = fit_vp(x, cp, y[i], grid, gram)
        its.append(it)
        rel.append((chi - rec["chi2_std"][i]) / rec["chi2_std"][i])
        neg += ab.min() <= 0
    rel = np.array(rel)
    print("%d curves%s: VP %.2f iterations per fit, lumen %.2f on the same curves" %
          (len(sel), " (lumen > 40 iterations)" if "--slow" in args else "", np.mean(its), rec["it"][sel].mean()))
    print("VP chi2 against the standard tier's: median relative %.1e, higher by > 1e-6 on %d, lower on %d; "
          "an amplitude <= 0 on %d" % (np.median(rel), (rel > 1e-6).sum(), (rel < -1e-6).sum(), neg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
