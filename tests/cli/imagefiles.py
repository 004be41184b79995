"""Small PNG and NIfTI-1 writers and readers for the CLI tests (standard library only).
A test's heredoc script imports it with sys.path set to tests/cli (LUMEN_CLI_TESTS in lib.sh)."""
import gzip, struct, zlib


def png_write(path, w, h, px, bits):
    """Grey PNG of w x h values px (row-major), 8 or 16 bits, filter 0 on every row."""
    rows = []
    for y in range(h):
        r = px[y*w:(y+1)*w]
        rows.append(b'\x00' + (bytes(r) if bits == 8 else b''.join(struct.pack('>H', v) for v in r)))
    def ch(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + ch(b'IHDR', struct.pack('>IIBBBBB', w, h, bits, 0, 0, 0, 0))
                           + ch(b'IDAT', zlib.compress(b''.join(rows))) + ch(b'IEND', b''))


def png_read(path):
    """(w, h, bits, values) of a grey 8- or 16-bit PNG, any row filters."""
    d = open(path, 'rb').read(); pos = 8; idat = b''
    while pos < len(d):
        n, t = struct.unpack('>I4s', d[pos:pos+8]); c = d[pos+8:pos+8+n]; pos += 12 + n
        if t == b'IHDR': w, h, bits, ct = struct.unpack('>IIBB', c[:10])
        if t == b'IDAT': idat += c
    raw = zlib.decompress(idat); bpp = bits // 8; stride = w * bpp; out = []; prev = bytearray(stride); p = 0
    for y in range(h):
        f = raw[p]; line = bytearray(raw[p+1:p+1+stride]); p += 1 + stride
        for i in range(stride):
            a = line[i-bpp] if i >= bpp else 0; b = prev[i]; c = prev[i-bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2*c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        out += list(line) if bits == 8 else [line[2*i] << 8 | line[2*i+1] for i in range(w)]
    return w, h, bits, out


def nii_write(path, dims, vals, dtype=16):
    """Single-file NIfTI-1 (.nii, or gzipped .nii.gz) of vals: float32 (16), complex64 (32: the
    values as real parts), uint8 (2) or uint16 (512); pixdim 1, vox_offset 352."""
    hdr = bytearray(348); struct.pack_into('<i', hdr, 0, 348)
    dim = [len(dims)] + list(dims) + [1] * (7 - len(dims)); struct.pack_into('<8h', hdr, 40, *dim)
    bp = {16: 32, 32: 64, 2: 8, 512: 16}[dtype]
    struct.pack_into('<hh', hdr, 70, dtype, bp); struct.pack_into('<8f', hdr, 76, 1, 1, 1, 1, 1, 1, 1, 1)
    struct.pack_into('<f', hdr, 108, 352); hdr[344:348] = b'n+1\x00'
    if dtype == 32:
        body = struct.pack('<%df' % (2 * len(vals)), *[x for v in vals for x in (v, 0)])
    else:
        body = struct.pack('<%d%s' % (len(vals), {16: 'f', 2: 'B', 512: 'H'}[dtype]), *vals)
    (gzip.open if path.endswith('.gz') else open)(path, 'wb').write(bytes(hdr) + b'\x00' * 4 + body)


def nii_read(path):
    """(dims, datatype, values) of a single-file NIfTI-1."""
    d = (gzip.open if path.endswith('.gz') else open)(path, 'rb').read()
    dim = struct.unpack_from('<8h', d, 40); dt = struct.unpack_from('<h', d, 70)[0]; off = int(struct.unpack_from('<f', d, 108)[0])
    n = 1
    for k in range(dim[0]): n *= dim[1+k]
    fmt = {2: 'B', 4: 'h', 16: 'f', 8: 'i', 512: 'H', 64: 'd'}[dt]
    return list(dim[1:1+dim[0]]), dt, list(struct.unpack_from('<%d%s' % (n, fmt), d, off))
