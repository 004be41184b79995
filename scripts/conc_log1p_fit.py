#!/usr/bin/env python3
"""The coefficients of stage A's float log1p (src/pipeline/conc_f32_impl.inc).

log(1 + f) = f - f^2/2 + f^3 R(f) on f in [sqrt(1/2) - 1, sqrt(2) - 1]: R fitted by least squares
on Chebyshev nodes, weighted by f^2 (the relative error of log(1 + f) is ~f^2 times R's error),
for degrees 5-8; prints each degree's worst relative error (units of 2^-24, float coefficients,
double arithmetic) and its coefficients, lowest first (the kernel uses degree 7, evaluated from
the highest). Needs numpy and mpmath (Debian: python3-numpy, python3-mpmath); not part of the
build.
"""
import mpmath as mp, numpy as np
mp.mp.dps=40
a=float(mp.sqrt(0.5)-1); b=float(mp.sqrt(2)-1)
def R(f):
    f=mp.mpf(f)
    if abs(f)<1e-6: return mp.mpf(1)/3 - f/4 + f*f/5
    return (mp.log1p(f)-f+f*f/2)/f**3
N=400
xs=[ (a+b)/2+(b-a)/2*np.cos(np.pi*(k+0.5)/N) for k in range(N)]
for deg in (5,6,7,8):
    A=np.array([[x**j*x*x for j in range(deg+1)] for x in xs])  # weight f^2
    y=np.array([float(R(x))*x*x for x in xs])
    c=np.linalg.lstsq(A,y,rcond=None)[0]
    cf=np.float32(c)
    # error in float-rounded coefficients, relative error of log1p(f) approx in double arithmetic
    err=0
    for x in np.linspace(a,b,20001):
        x=float(x); p=0.0
        for j in reversed(range(deg+1)): p=p*x+float(cf[j])
        approx=x-0.5*x*x+x**3*p; ex=float(mp.log1p(x))
        if ex!=0: err=max(err,abs(approx-ex)/abs(ex))
    print('degree', deg, 'max rel. error %.3f x 2^-24' % (err / 2**-24), [repr(float(v)) for v in cf])
