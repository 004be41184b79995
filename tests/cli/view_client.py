"""Checks of a running `lumen view` server (tests/cli/test_view.sh): its answers against the output
folder's maps and against `lumen fit` of the same voxel's curve, path and method refusals, malformed
requests. Standard library and numpy (Debian's python3-numpy).
    python3 view_client.py URL OUTDIR PREFIX LUMEN"""
import gzip
import json
import os
import random
import socket
import struct
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

URL, OUT, PREFIX, LUMEN = sys.argv[1:5]
fails = 0


def check(name, ok, detail=""):
    global fails
    print(("ok: " if ok else "FAIL: ") + name + ("" if ok else " (%s)" % detail))
    fails += 0 if ok else 1


def get(path):
    with urllib.request.urlopen(URL.rstrip("/") + path, timeout=20) as r:
        return r.status, r.headers, r.read()


def status(path, method="GET"):
    req = urllib.request.Request(URL.rstrip("/") + path, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def nii(name):
    raw = gzip.open(os.path.join(OUT, name)).read()
    dims = struct.unpack_from("<8h", raw, 40)
    off = int(struct.unpack_from("<f", raw, 108)[0])
    n = int(np.prod(dims[1:dims[0] + 1]))
    return np.frombuffer(raw, "<f4", n, off).reshape(dims[1:dims[0] + 1][::-1])  # (z, y, x)


info = json.loads(get("/api/info")[2])
nx, ny, nz, nt = info["dims"]
check("info: the run's grid and frames", (nx, ny, nz) == (32, 24, 2) and nt == 80, info["dims"])
check("info: every model's maps listed, measured curves available",
      {"tofts", "etofts"} <= set(info["models"]) and info["measured"], info["models"])

# a voxel in the tissue patches (px 1, py 1 of the demo: Ktrans 0.1, ve 0.25), slice 1
x, y, z = 9, 8, 1
v = json.loads(get("/api/voxel?x=%d&y=%d&z=%d" % (x, y, z))[2])
conc = nii(PREFIX + "_desc-conc_dce.nii.gz")  # (t, z, y, x)
check("voxel: the measured curve is the saved concentration series",
      np.allclose(np.array(v["measured"], float), conc[:, z, y, x], rtol=1e-6, atol=1e-9))
for m in ("tofts", "etofts"):
    mo = v["models"][m]
    for p, q in mo["params"].items():
        want = float(nii("%s_model-%s_param-%s.nii.gz" % (PREFIX, m, p))[z, y, x])
        check("voxel: %s %s equals its map (%g)" % (m, p, want), abs(q["value"] - want) <= 1e-6 * max(1, abs(want)), q)
    sse = float(nii("%s_model-%s_param-sse.nii.gz" % (PREFIX, m))[z, y, x])
    res = np.array(v["measured"]) - np.array(mo["curve"])
    check("voxel: the %s curve is the fit's (sum of squared residuals %.6g = the sse map's %.6g)" % (m, (res ** 2).sum(), sse),
          abs((res ** 2).sum() - sse) <= 1e-3 * sse + 1e-9)
# against lumen fit on the same curve (seconds, the run's AIF)
tmp = os.path.join(os.getcwd(), "vfit")
os.makedirs(tmp, exist_ok=True)
np.savetxt(os.path.join(tmp, "t.txt"), np.array(info["t_min"]) * 60)
np.savetxt(os.path.join(tmp, "aif.txt"), np.array(info["aif"]))
np.savetxt(os.path.join(tmp, "c.txt"), np.array(v["measured"])[None, :])
out = subprocess.run([LUMEN, "fit", "--model", "etofts", "--curves", os.path.join(tmp, "c.txt"), "--times",
                      os.path.join(tmp, "t.txt"), "--aif", os.path.join(tmp, "aif.txt")],
                     stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.splitlines()
head = out[0].split(",")
row = dict(zip(head, out[1].split(",")))
for p in ("Ktrans", "ve", "vp"):
    a, b = float(row[p]), v["models"]["etofts"]["params"][p]["value"]
    check("voxel: etofts %s agrees with lumen fit on the same curve (%.6g vs %.6g)" % (p, b, a), abs(a - b) <= 2e-3 * abs(a) + 1e-5)

sl = json.loads(get("/api/slice?map=%s_model-etofts_param-vp.nii.gz&z=0" % PREFIX)[2])
vp = nii(PREFIX + "_model-etofts_param-vp.nii.gz")[0]
got = np.array([np.nan if q is None else q for q in sl["values"]], float).reshape(ny, nx)
check("slice: another map and slice equal the NIfTI (NaN as null)", np.allclose(got, vp, rtol=1e-6, equal_nan=True))

roi = json.loads(get("/api/roi?x0=6&y0=6&x1=11&y1=11&z=1")[2])
k = nii(PREFIX + "_model-tofts_param-Ktrans.nii.gz")[1, 6:12, 6:12]
s = roi["stats"][PREFIX + "_model-tofts_param-Ktrans.nii.gz"]
check("roi: 36 voxels, tofts Ktrans mean and median of the rectangle",
      roi["voxels"] == 36 and abs(s["mean"] - k.mean()) < 1e-6 and abs(s["median"] - np.median(k)) < 1e-6, s)
st, hdr, body = get("/api/roi.csv?x0=6&y0=6&x1=11&y1=11&z=1")
check("roi: the CSV download", st == 200 and hdr["Content-Type"].startswith("text/csv") and b"map,finite,mean" in body)

# refusals: paths, methods, bad arguments; nothing of the disk is served
for path in ("/../" + PREFIX + "_runlog.json", "/" + PREFIX + "_runlog.json", "/etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
             "/api/../../etc/passwd", "/figures/", "/api/slice/../../../etc/passwd"):
    check("refused: GET %s (404)" % path, status(path) == 404, status(path))
check("refused: a map outside the run (400)", status("/api/slice?map=../../etc/passwd&z=0") == 400)
check("refused: a voxel outside the image (400)", status("/api/voxel?x=999&y=0&z=0") == 400)
check("refused: POST (405)", status("/api/info", "POST") == 405)
# malformed request lines: the server answers or closes, and still serves afterwards
host, port = urllib.parse.urlparse(URL).hostname, urllib.parse.urlparse(URL).port
rnd = random.Random(44)
junk = [b"GET\r\n\r\n", b"\x00\xff\xfe GARBAGE\r\n\r\n", b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
        b"GET /api/voxel?x=1&y=1&z=1 HTTP/9.9\r\nHost: x\r\n\r\n", b"GET / HTTP/1.1\r\nContent-Length: -5\r\n\r\n"]
junk += [bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 300))) + b"\r\n\r\n" for _ in range(150)]
for j in junk:
    try:
        with socket.create_connection((host, port), timeout=5) as c:
            c.sendall(j)
            c.settimeout(5)
            try:
                c.recv(4096)
            except OSError:
                pass
    except OSError:
        pass
check("after %d malformed requests the server still answers" % len(junk), get("/api/info")[0] == 200)
sys.exit(1 if fails else 0)
