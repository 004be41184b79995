#!/usr/bin/env python3
"""Inspects a lumen report (issue 17 items 7-10) for tests/cli/test_report.sh; standard library
only. Subcommands (exit 0 when the claim holds, 1 with a message otherwise):
  png-info FILE                      prints "WIDTH HEIGHT COLOUR_TYPE"
  png-has FILE R,G,B [R,G,B ...]     every colour occurs in the PNG (8-bit RGB)
  png-lacks FILE R,G,B               the colour does not occur
  png-count FILE R,G,B               prints how many pixels have the colour
  nifti-set IN OUT X,Y,Z VALUE      copies a NIfTI (.nii.gz) with one voxel changed (test input)
  curves REPORT OUTDIR PREFIX        every fitted-curve label "pNN (x,y,z): PARAM V" names a voxel
                                     whose map value is V (3 significant digits) and whose rank
                                     among the converged voxels is the NN-th percentile
"""
import gzip, re, struct, sys, zlib


def png_pixels(path):
    data = open(path, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', path + ': not a PNG'
    pos, idat, w = 8, b'', 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype] * depth // 8
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, ctype, depth, rows


def colours(path):
    w, h, ctype, depth, rows = png_pixels(path)
    assert ctype == 2 and depth == 8, '%s: colour type %d depth %d, expected 8-bit RGB' % (path, ctype, depth)
    return {tuple(r[i:i + 3]) for r in rows for i in range(0, len(r), 3)}


def nifti(path):
    d = gzip.open(path).read() if path.endswith('.gz') else open(path, 'rb').read()
    dims = struct.unpack('<8h', d[40:56])
    dtype, = struct.unpack('<h', d[70:72])
    off = int(struct.unpack('<f', d[108:112])[0])
    n = dims[1] * dims[2] * dims[3]
    fmt = {16: 'f', 64: 'd', 2: 'B', 4: 'h', 8: 'i'}[dtype]
    return dims[1:4], struct.unpack('<%d%s' % (n, fmt), d[off:off + n * struct.calcsize(fmt)])


def curves(report, outdir, prefix):
    html = open(report, encoding='utf-8').read()
    plots = re.findall(r'<title>([a-z0-9]+): measured \(dots\) and fitted \(line\)[^<]*</title>(.*?)</svg>', html, re.S)
    assert plots, 'no fitted-curve plot in ' + report
    for model, svg in plots:
        labels = re.findall(r'>p(\d+) \((\d+),(\d+),(\d+)\): (\w+) ([0-9.e+-]+)[^<]*</text>', svg)
        assert len(labels) == 3, '%s: %d labelled voxels, expected 3' % (model, len(labels))
        (nx, ny, nz), state = nifti('%s/%s_model-%s_param-state.nii.gz' % (outdir, prefix, model))
        param = labels[0][4]
        _, vals = nifti('%s/%s_model-%s_param-%s.nii.gz' % (outdir, prefix, model, param))
        conv = sorted(v for v, s in zip(vals, state) if s == 0 and v == v)
        for pct, x, y, z, p, v in labels:
            i = int(x) + nx * (int(y) + ny * int(z))
            got = vals[i]
            assert state[i] == 0, '%s p%s: voxel %s,%s,%s is not converged' % (model, pct, x, y, z)
            assert abs(got - float(v)) <= 0.0051 * abs(got), '%s p%s: label %s, map %g' % (model, pct, v, got)
            want = conv[int((len(conv) - 1) * int(pct) / 100.0 + 0.5)]
            assert got == want, '%s p%s: value %g, the %s-th percentile is %g' % (model, pct, got, pct, want)
        nfit = len(re.findall(r'<polyline', svg))
        assert nfit >= 3, '%s: %d fitted lines' % (model, nfit)
        print('ok: %s: 3 voxels at p10/p50/p90 of %s (%d converged)' % (model, param, len(conv)))


def main(a):
    if a[0] == 'png-info':
        w, h, ctype, depth, _ = png_pixels(a[1])
        print(w, h, ctype)
    elif a[0] in ('png-has', 'png-lacks'):
        have = colours(a[1])
        for spec in a[2:]:
            c = tuple(int(v) for v in spec.split(','))
            if (c in have) != (a[0] == 'png-has'):
                sys.exit('%s: colour %s %s' % (a[1], spec, 'missing' if a[0] == 'png-has' else 'present'))
    elif a[0] == 'png-count':
        w, h, ctype, depth, rows = png_pixels(a[1])
        c = bytes(int(v) for v in a[2].split(','))
        print(sum(1 for r in rows for i in range(0, len(r), 3) if r[i:i + 3] == c))
    elif a[0] == 'nifti-set':
        d = bytearray(gzip.open(a[1]).read())
        dims = struct.unpack('<8h', d[40:56])
        dtype, = struct.unpack('<h', d[70:72])
        assert dtype == 16, a[1] + ': expected float32'
        x, y, z = (int(v) for v in a[3].split(','))
        i = int(struct.unpack('<f', d[108:112])[0]) + 4 * (x + dims[1] * (y + dims[2] * z))
        d[i:i + 4] = struct.pack('<f', float(a[4]))
        with gzip.open(a[2], 'wb') as f:
            f.write(bytes(d))
    elif a[0] == 'curves':
        curves(*a[1:4])
    else:
        sys.exit('unknown subcommand ' + a[0])


if __name__ == '__main__':
    try:
        main(sys.argv[1:])
    except AssertionError as e:
        sys.exit('FAIL: %s' % e)
