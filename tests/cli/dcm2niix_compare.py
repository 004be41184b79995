"""lumen convert's output against dcm2niix's (tests/cli/test_dicom_ge.sh, bench/bench_convert.sh),
independently of lumen: both NIfTI files are read here (numpy, the NIfTI-1 header by hand), brought
to one orientation (each voxel axis permuted and flipped to the world axis it runs closest to, as
nibabel's as_closest_canonical does) and compared.

  dcm2niix_compare.py same LUMEN.nii[.gz] REF.nii [REF.json] [--volumes-by-position]
      exit 0 when the shapes are equal, every voxel equal (after scl_slope/scl_inter), the volumes
      in the same order, the affines (after reorientation) within 1e-3 mm, and, with REF.json,
      LUMEN's pixdim[4] and its sidecar's RepetitionTime equal to REF.json's RepetitionTime;
      prints what differs."""
import gzip, json, os, struct, sys
import numpy as np

DTYPES = {2: '<u1', 4: '<i2', 8: '<i4', 16: '<f4', 64: '<f8', 256: '<i1', 512: '<u2', 768: '<u4'}


def nii(path):
    """(data as float64 with the NIfTI axes (x, y, z[, t]), 4x4 sform, pixdim[1..4])."""
    d = (gzip.open if path.endswith('.gz') else open)(path, 'rb').read()
    dim = struct.unpack_from('<8h', d, 40)
    dt = struct.unpack_from('<h', d, 70)[0]
    pix = struct.unpack_from('<8f', d, 76)
    off = int(struct.unpack_from('<f', d, 108)[0])
    slope, inter = struct.unpack_from('<ff', d, 112)
    dims = [int(v) for v in dim[1:1 + dim[0]]]
    n = int(np.prod(dims))
    v = np.frombuffer(d, dtype=DTYPES[dt], count=n, offset=off).astype(np.float64)
    if slope not in (0.0, 1.0) or inter != 0:
        v = v * (slope or 1.0) + inter
    A = np.eye(4)
    for r, o in enumerate((280, 296, 312)):
        A[r] = struct.unpack_from('<4f', d, o)
    return v.reshape(list(reversed(dims))).transpose(), A, pix[1:5]


def canonical(data, A):
    """data and A with voxel axis k along +world axis k (closest), as nibabel's as_closest_canonical."""
    R = A[:3, :3]
    axes = [int(np.argmax(np.abs(R[:, k]))) for k in range(3)]
    if sorted(axes) != [0, 1, 2]:
        raise SystemExit('ambiguous orientation: %s' % R)
    B = A.copy()
    for k in range(3):  # flip the voxel axes that run against their world axis
        if R[axes[k], k] < 0:
            n = data.shape[k]
            data = np.flip(data, axis=k)
            B[:3, 3] = B[:3, 3] + B[:3, k] * (n - 1)
            B[:3, k] = -B[:3, k]
    order = [axes.index(w) for w in range(3)]  # the voxel axis that runs along world axis w
    data = np.transpose(data, order + list(range(3, data.ndim)))
    C = np.eye(4)
    C[:3, :3] = B[:3, :3][:, order]
    C[:3, 3] = B[:3, 3]
    return data, C


def same(args):
    lumen, ref = args[0], args[1]
    ref_json = args[2] if len(args) > 2 and args[2].endswith('.json') else None
    a, A, pa = nii(lumen)
    b, B, pb = nii(ref)
    a, A = canonical(a, A)
    b, B = canonical(b, B)
    ok = True
    if a.shape != b.shape:
        print('shape %s, dcm2niix %s' % (a.shape, b.shape))
        return 1
    diff = np.abs(a - b)
    if diff.max() > 0:
        bad = np.argwhere(diff > 0)
        print('%d voxels differ (first at %s: %g, dcm2niix %g)' % (len(bad), tuple(bad[0]), a[tuple(bad[0])],
                                                                  b[tuple(bad[0])]))
        if a.ndim == 4:  # is it the volume order?
            perm = [int(np.argmin([np.abs(a[..., t] - b[..., u]).max() for u in range(b.shape[3])]))
                    for t in range(a.shape[3])]
            print('  lumen volume t matches dcm2niix volume %s' % perm)
        ok = False
    if np.abs(A - B).max() > 1e-3:
        print('affine (canonical) differs by %g mm:\n%s\ndcm2niix:\n%s' % (np.abs(A - B).max(), A, B))
        ok = False
    if ref_json:
        tr = json.load(open(ref_json))['RepetitionTime']
        side = json.load(open(lumen.replace('.nii.gz', '.json').replace('.nii', '.json')))
        if a.ndim == 4 and abs(pa[3] - tr) > 1e-6:
            print('pixdim[4] %g s, dcm2niix RepetitionTime %g s' % (pa[3], tr))
            ok = False
        if abs(side.get('RepetitionTime', -1) - tr) > 1e-6:
            print('sidecar RepetitionTime %s, dcm2niix %g' % (side.get('RepetitionTime'), tr))
            ok = False
    print('%s: shape %s, %s' % (os.path.basename(lumen), a.shape, 'same as dcm2niix' if ok else 'DIFFERS'))
    return 0 if ok else 1


if __name__ == '__main__':
    if len(sys.argv) < 4 or sys.argv[1] != 'same':
        raise SystemExit(__doc__)
    sys.exit(same(sys.argv[2:]))
