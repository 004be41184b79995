#!/usr/bin/env python3
"""Writes the bad-input matrix of tests/cli/test_bad_inputs.sh into DIR (standard library only):
a small valid DCE series (good_dce.nii.gz + sidecar, T1 map, mask; a curve table set for
lumen fit; a PNG for lumen filter), and one small broken file per case, named after the case.
    python3 scripts/make_bad_inputs.py DIR
Each case is listed in CASES below with what is wrong with it (printed with --list)."""
import gzip, json, math, os, struct, sys, zlib

NX, NY, NZ, NT = 4, 4, 2, 24

def nifti1(dims, data=None, datatype=16, bitpix=32, vox_offset=352.0, magic=b'n+1\0', raw_dims=None,
           pixdim=(1.0, 2.0, 2.0, 4.0, 5.0, 1.0, 1.0, 1.0)):
    hdr = bytearray(348)
    struct.pack_into('<i', hdr, 0, 348)
    d = raw_dims or ([len(dims)] + list(dims) + [1] * (7 - len(dims)))
    struct.pack_into('<8h', hdr, 40, *d)
    struct.pack_into('<hh', hdr, 70, datatype, bitpix)
    struct.pack_into('<8f', hdr, 76, *pixdim)
    struct.pack_into('<f', hdr, 108, vox_offset)
    struct.pack_into('<B', hdr, 123, 10)
    struct.pack_into('<hh', hdr, 252, 0, 1)
    struct.pack_into('<12f', hdr, 280, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 4, 0)
    hdr[344:348] = magic
    if data is None:
        data = b''
    elif not isinstance(data, bytes):
        data = struct.pack('<%df' % len(data), *data)
    return bytes(hdr) + b'\0' * 4 + data

def nifti2(dims, datatype=16, bitpix=32, data=b'', qform=0):
    hdr = bytearray(540)
    struct.pack_into('<i', hdr, 0, 540)
    hdr[4:12] = b'n+2\0\r\n\032\n'
    struct.pack_into('<hh', hdr, 12, datatype, bitpix)
    d = [len(dims)] + list(dims) + [1] * (7 - len(dims))
    struct.pack_into('<8q', hdr, 16, *d)
    struct.pack_into('<8d', hdr, 104, 1, 2, 2, 2, 1, 1, 1, 1)
    struct.pack_into('<q', hdr, 168, 544)
    struct.pack_into('<i', hdr, 344, qform)  # sform_code 1 at 348
    struct.pack_into('<i', hdr, 348, 1)
    struct.pack_into('<12d', hdr, 400, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0)
    return bytes(hdr) + b'\0' * 4 + data

def write(path, body, gz=None):
    if gz is None:
        gz = path.endswith('.gz')
    with open(path, 'wb') as f:
        f.write(gzip.compress(body) if gz else body)

def parker_like(t):
    return 0.0 if t < 30 else 5.0 * math.exp(-(t - 30) / 60.0) * (1 - math.exp(-(t - 30) / 5.0))

def good_series():
    nv = NX * NY * NZ
    data = []
    for f in range(NT):
        t = 5.0 * f
        c = parker_like(t)
        for v in range(nv):
            data.append(1000.0 * (1.0 + 0.3 * c * (0.5 + (v % 7) / 7.0)))
    return data

def png(width, height):
    def chunk(t, b):
        return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
    raw = b''.join(b'\0' + bytes(((x * 9 + y * 5) * 3) & 0xFF for x in range(width)) for y in range(height))
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', width, height, 8, 0, 0, 0, 0)) +
            chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))

SIDECAR = {"FlipAngle": 20, "RepetitionTime": 0.005, "ContrastAgentRelaxivity": 4.5,
           "FrameTimesStart": [5.0 * f for f in range(NT)]}

# (case file, what is wrong) -- the test runs each through the commands that read such a file
CASES = [
    ('trunc.nii.gz', 'gzip stream cut in the middle of the voxel data'),
    ('trunc.nii', 'plain .nii shorter than vox_offset + data'),
    ('empty.nii.gz', 'zero bytes'),
    ('notnifti.nii', 'text, not a NIfTI header'),
    ('badmagic.nii', 'magic is not n+1/n+2'),
    ('huge.nii', 'header claims 10^15 voxels (1000^4) with no data'),
    ('huge15.nii', 'NIfTI-2 header claims 10^15 voxels (100000^3) with no data'),
    ('overflow.nii', 'NIfTI-2 header whose voxel count overflows int64 (2^40 x 2^40)'),
    ('negdim.nii', 'dim[3] = -7'),
    ('zerodim.nii', 'dim[2] = 0'),
    ('dim0.nii', 'dim[0] = 9 (more than 7 dims)'),
    ('badbitpix.nii', 'datatype float32 with bitpix 8'),
    ('badtype.nii', 'datatype 999 (unknown)'),
    ('complex.nii', 'datatype complex64 (unsupported)'),
    ('bigoffset.nii', 'vox_offset 1e30'),
    ('nanoffset.nii', 'vox_offset NaN'),
    ('nanframe.nii.gz', '4-D series whose frame 7 has no finite value'),
    ('dims3d.nii.gz', '3-D volume where a 4-D series is needed'),
    ('onevox.nii.gz', '4-D series of a single frame'),
    ('smallgrid.nii.gz', 'T1 map / mask on another grid (3x3x2)'),
    ('badjson/dce.nii.gz', 'valid series whose sidecar is not JSON'),
    ('wrongjson/dce.nii.gz', 'valid series whose sidecar has FlipAngle "20" (a string)'),
    ('arrayjson/dce.nii.gz', 'valid series whose sidecar is a JSON array'),
    ('badconfig.txt', 'config line without = '),
    ('badconfig2.txt', 'config value not a number'),
    ('badconfig3.txt', 'config value out of range (hematocrit = 7)'),
    ('longline.txt', 'config line of 5000 characters (a comment)'),
    ('badaif.txt', 'AIF table with a word in it'),
    ('emptyaif.txt', 'AIF table with only comments'),
    ('raggedcurves.txt', 'curve table with rows of unequal length'),
    ('nulcurves.txt', 'curve table with a NUL byte'),
    ('hugenum.txt', 'times table whose 5th value is 1e999'),
    ('inftimes.txt', 'times table whose 3rd value is inf'),
    ('nanaif.txt', 'AIF table whose 6th value is nan'),
    ('emptyfield.txt', 'times table with an empty field (0,,10)'),
    ('wordcurves.txt', 'curve table with a word on line 2'),
    ('hugecurves.txt', 'curve table with 1e999 on line 3'),
    ('infcurves.txt', 'curve table with -inf on line 2'),
    ('emptycurves.txt', 'curve table with only comments'),
    ('badflip.txt', 'flip-angle file with a word'),
    ('trunc.png', 'PNG cut in the middle of IDAT'),
    ('badcrc.png', 'PNG with a wrong IHDR CRC'),
    ('hugepng.png', 'PNG whose IHDR claims 2000000 x 2000000 pixels'),
    ('notpng.png', 'text named .png'),
]

def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--list':
        for name, what in CASES:
            print('%-22s %s' % (name, what))
        return
    out = sys.argv[1] if len(sys.argv) > 1 else 'bad-inputs'
    os.makedirs(out, exist_ok=True)
    p = lambda n: os.path.join(out, n)
    series = good_series()
    nv = NX * NY * NZ
    good = nifti1((NX, NY, NZ, NT), series)
    write(p('good_dce.nii.gz'), good)
    json.dump(SIDECAR, open(p('good_dce.json'), 'w'))
    write(p('good_t1.nii.gz'), nifti1((NX, NY, NZ), [1.2] * nv))
    write(p('good_mask.nii.gz'), nifti1((NX, NY, NZ), [1.0] * nv))
    write(p('good_vol.nii.gz'), nifti1((NX, NY, NZ), [float(i) for i in range(nv)]))
    write(p('good.png'), png(8, 6))
    times = [5.0 * f for f in range(NT)]
    open(p('good_times.txt'), 'w').write('\n'.join('%g' % t for t in times) + '\n')
    open(p('good_aif.txt'), 'w').write('\n'.join('%g' % parker_like(t) for t in times) + '\n')
    open(p('good_curves.txt'), 'w').write(''.join(' '.join('%g' % (0.3 * parker_like(t) * (k + 1) / 3) for t in times) + '\n'
                                                 for k in range(3)))
    # NIfTI cases
    gz = gzip.compress(good)
    write(p('trunc.nii.gz'), gz[:len(gz) // 2], gz=False)
    write(p('trunc.nii'), good[:len(good) // 2], gz=False)
    write(p('empty.nii.gz'), b'', gz=False)
    write(p('notnifti.nii'), b'this is not a NIfTI file\n' * 20)
    write(p('badmagic.nii'), nifti1((NX, NY, NZ), [1.0] * nv, magic=b'xyz\0'))
    write(p('huge.nii'), nifti1((1000, 1000, 1000, 1000)))
    write(p('huge15.nii'), nifti2((100000, 100000, 100000)))
    write(p('overflow.nii'), nifti2((1 << 40, 1 << 40)))
    write(p('negdim.nii'), nifti1(None, [1.0] * nv, raw_dims=[3, NX, NY, -7, 1, 1, 1, 1]))
    write(p('zerodim.nii'), nifti1(None, [1.0] * nv, raw_dims=[3, NX, 0, NZ, 1, 1, 1, 1]))
    write(p('dim0.nii'), nifti1(None, [1.0] * nv, raw_dims=[9, NX, NY, NZ, 1, 1, 1, 1]))
    write(p('badbitpix.nii'), nifti1((NX, NY, NZ), [1.0] * nv, bitpix=8))
    write(p('badtype.nii'), nifti1((NX, NY, NZ), [1.0] * nv, datatype=999))
    write(p('complex.nii'), nifti1((NX, NY, NZ), [1.0] * (2 * nv), datatype=32, bitpix=64))
    write(p('bigoffset.nii'), nifti1((NX, NY, NZ), [1.0] * nv, vox_offset=1e30))
    write(p('nanoffset.nii'), nifti1((NX, NY, NZ), [1.0] * nv, vox_offset=float('nan')))
    d = list(series)
    d[7 * nv:8 * nv] = [float('nan')] * nv
    write(p('nanframe.nii.gz'), nifti1((NX, NY, NZ, NT), d))
    json.dump(SIDECAR, open(p('nanframe.json'), 'w'))
    write(p('dims3d.nii.gz'), nifti1((NX, NY, NZ), series[:nv]))
    json.dump(SIDECAR, open(p('dims3d.json'), 'w'))
    write(p('onevox.nii.gz'), nifti1((NX, NY, NZ, 1), series[:nv]))
    json.dump(dict(SIDECAR, FrameTimesStart=[0.0]), open(p('onevox.json'), 'w'))
    write(p('smallgrid.nii.gz'), nifti1((3, 3, 2), [1.2] * 18))
    for sub, text in (('badjson', '{"FlipAngle": 20,\n "RepetitionTime": .005}'),
                      ('wrongjson', '{"FlipAngle": "20", "RepetitionTime": 0.005, "ContrastAgentRelaxivity": 4.5}'),
                      ('arrayjson', '[20, 0.005]')):
        os.makedirs(p(sub), exist_ok=True)
        write(p(sub + '/dce.nii.gz'), good)
        open(p(sub + '/dce.json'), 'w').write(text)
    # config and tables
    open(p('badconfig.txt'), 'w').write('# lumen config\nrelaxivity 4.5\n')
    open(p('badconfig2.txt'), 'w').write('relaxivity = abc\n')
    open(p('badconfig3.txt'), 'w').write('hematocrit = 7\n')
    open(p('longline.txt'), 'w').write('# ' + 'x' * 5000 + ' relaxivity = 4\n')
    open(p('badaif.txt'), 'w').write('0\n0.5\noops\n')
    open(p('emptyaif.txt'), 'w').write('# nothing here\n\n')
    open(p('raggedcurves.txt'), 'w').write('1 2 3\n4 5\n')
    open(p('nulcurves.txt'), 'wb').write(b'1 2 3\n4 \0 6\n')
    open(p('hugenum.txt'), 'w').write(''.join('%s\n' % ('1e999' if f == 4 else '%g' % (5.0 * f)) for f in range(NT)))
    open(p('inftimes.txt'), 'w').write(''.join('%s\n' % ('inf' if f == 2 else '%g' % (5.0 * f)) for f in range(NT)))
    open(p('nanaif.txt'), 'w').write(''.join('%s\n' % ('nan' if f == 5 else '%g' % parker_like(5.0 * f)) for f in range(NT)))
    open(p('emptyfield.txt'), 'w').write('0,,10\n')
    row = ' '.join('%g' % (0.1 * parker_like(5.0 * f)) for f in range(NT))
    open(p('wordcurves.txt'), 'w').write(row + '\n' + row.replace(' ', ' oops ', 1) + '\n')
    open(p('hugecurves.txt'), 'w').write(row + '\n' + row + '\n1e999' + row[row.index(' '):] + '\n')
    open(p('infcurves.txt'), 'w').write(row + '\n-inf' + row[row.index(' '):] + '\n')
    open(p('emptycurves.txt'), 'w').write('# no curves\n')
    open(p('badflip.txt'), 'w').write('2\n10\nfifteen\n')
    # PNG cases
    good_png = png(8, 6)
    write(p('trunc.png'), good_png[:len(good_png) - 30], gz=False)
    bad = bytearray(good_png)
    bad[29] ^= 0xFF  # a byte of the IHDR CRC
    write(p('badcrc.png'), bytes(bad), gz=False)
    def chunk(t, b):
        return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
    write(p('hugepng.png'), b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 2000000, 2000000, 8, 0, 0, 0, 0)) +
          chunk(b'IDAT', zlib.compress(b'\0' * 100)) + chunk(b'IEND', b''), gz=False)
    write(p('notpng.png'), b'not a png\n', gz=False)

if __name__ == '__main__':
    main()
