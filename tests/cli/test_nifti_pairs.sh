#!/usr/bin/env bash
# NIfTI .hdr/.img pairs (magic "ni1"/"ni2": FSL's NIFTI_PAIR, older SPM), written by nibabel (Debian
# python3-nibabel, a third-party writer): NIfTI-1 and NIfTI-2, plain and gzip-compressed, little and
# big endian, int16 with scl_slope/scl_inter, named by either file, read by `lumen filter` with the
# values and the affine nibabel gives (get_fdata, affine); a 4-D pair with its T1 map as a pair in
# `lumen dce` gives the maps of the same data as single files, and a pair's sidecar is X.json;
# `lumen.read_image` in Python reads a pair too. A .hdr without its .img, a .img without its .hdr, and a .img beside a single-file
# header are refused naming the missing or wrong file; nothing is written.
# Skips (77) without Debian's python3-nibabel (scripts/setup.sh installs it).
set -u
py=/usr/bin/python3
"$py" -c 'import nibabel, numpy' 2>/dev/null || { echo "Debian python3-nibabel missing (scripts/setup.sh): skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"

"$py" - <<'EOF' || { echo "FAIL: writing the pairs"; exit 1; }
import numpy as np, nibabel as nib
rng = np.random.default_rng(7)
A = np.array([[-2, 0.1, 0, 90], [0.05, 2.2, 0.1, -126], [0, -0.1, 3, -72], [0, 0, 0, 1]])
v = rng.normal(100, 30, (7, 6, 5)).astype(np.float32)
nib.save(nib.Nifti1Pair(v, A), 'p1.img')
nib.save(nib.Nifti1Pair(v, A), 'p1gz.img.gz')
nib.save(nib.Nifti2Pair(v, A), 'p2.img')
h = nib.Nifti1Header(); h.set_data_dtype(np.dtype('>f4'))
nib.save(nib.Nifti1Pair(v.astype('>f4'), A, header=h), 'pbe.img')
i = nib.Nifti1Pair(np.clip(v, 0, 300).astype(np.int16), A, dtype=np.int16); i.header.set_slope_inter(0.5, -3)
nib.save(i, 'pscl.hdr')
nib.save(nib.Nifti1Image(v, A), 'single.nii')
EOF
cmp_nib() {  # cmp_nib REF OUT: OUT's values and affine those nibabel reads from REF
  "$py" -c "
import sys, numpy as np, nibabel as nib
a, b = nib.load(sys.argv[1]), nib.load(sys.argv[2])
ok = a.shape == b.shape and np.allclose(a.get_fdata(), b.get_fdata(), rtol=1e-6, atol=1e-5) and np.allclose(a.affine, b.affine, atol=1e-4)
print('  ', sys.argv[1], a.shape, b.shape, 'max |diff|', np.abs(a.get_fdata() - b.get_fdata()).max() if a.shape == b.shape else '-')
sys.exit(0 if ok else 1)" "$1" "$2"
}
for f in p1.hdr p1.img p1gz.hdr.gz p1gz.img.gz p2.hdr p2.img pbe.hdr pscl.img; do
  out=out_${f//./_}.nii
  "$bin" filter convolve "$f" "$out" --kernel 1 -q 2> "$f.err"
  check "$f: read (exit 0)" "[ $? -eq 0 ]" || cat "$f.err"
  check "$f: values and affine those nibabel reads" "cmp_nib $f $out"
done

# a DCE series as a pair: the maps of the same data as single files
"$bin" dce-demo --out demo -q > /dev/null 2> demo.err || { cat demo.err; echo "FAIL: dce-demo"; exit 1; }
"$py" -c "
import nibabel as nib
for n in ('dce', 'T1map', 'mask'):
    i = nib.load(f'demo/sub-demo_{n}.nii.gz')
    p = nib.Nifti1Pair(i.dataobj, i.affine, i.header)
    nib.save(p, f'pair_{n}.hdr')"
common="--relaxivity 4.5 -q --no-report --aif parker --tr 0.005 --flip-angle 25 --dt 5 --prefix p"
"$bin" dce --dce demo/sub-demo_dce.nii.gz --t1map demo/sub-demo_T1map.nii.gz --mask demo/sub-demo_mask.nii.gz --out d_single $common 2> d_single.err || cat d_single.err
"$bin" dce --dce pair_dce.img --t1map pair_T1map.hdr --mask pair_mask.img --out d_pair $common 2> d_pair.err || cat d_pair.err
check "lumen dce on pairs: Ktrans and ve those of the single files" \
  "[ -s d_single/p_model-tofts_param-Ktrans.nii.gz ] && [ -s d_pair/p_model-tofts_param-ve.nii.gz ] &&
   cmp <(zcat d_single/p_model-tofts_param-Ktrans.nii.gz) <(zcat d_pair/p_model-tofts_param-Ktrans.nii.gz) &&
   cmp <(zcat d_single/p_model-tofts_param-ve.nii.gz) <(zcat d_pair/p_model-tofts_param-ve.nii.gz)"

cp demo/sub-demo_dce.json pair_dce.json
"$bin" dce --dce pair_dce.img --t1map pair_T1map.hdr --out d_side --relaxivity 4.5 -q --no-report --aif parker --prefix p 2> d_side.err ||
  cat d_side.err
check "a pair's sidecar is X.json (FlipAngle, RepetitionTime, FrameTimesStart read from pair_dce.json)" \
  "grep -q \"FA 20 deg (sidecar 'pair_dce.json' FlipAngle), TR 0.005 s (sidecar 'pair_dce.json' RepetitionTime)\" d_side/p_runlog.txt &&
   grep -q 'times from sidecar FrameTimesStart' d_side/p_runlog.txt" || cat d_side/p_runlog.txt

# Python: lumen.read_image of a pair (as test_dicom_ge.sh loads the library)
lib=$(dirname "$bin")/liblumen.so
if [ -f "$lib" ] && ldd "$lib" 2>/dev/null | grep -q libasan; then
  echo "note: liblumen.so is built with -fsanitize=address (not loadable into Python): the Python check did not run"
elif [ -f "$lib" ]; then
  check "lumen.read_image('p1.hdr') and ('p1gz.img.gz'): nibabel's values" \
    "LUMEN_LIBRARY=$lib PYTHONPATH=${LUMEN_SOURCE_DIR:-$LUMEN_CLI_TESTS/../..}/python $py -c \"
import sys, numpy as np, nibabel as nib, lumen
want = nib.load('p1.img').get_fdata()
for f in ('p1.hdr', 'p1gz.img.gz'):
    a, meta = lumen.read_image(f)
    a = np.asarray(a)
    if not (a.shape[::-1] == want.shape and np.allclose(a.T, want, rtol=1e-6)):
        print('  ', f, a.shape, want.shape); sys.exit(1)\""
fi

# refused, naming the file; nothing written
cp p1.hdr lonely.hdr
"$bin" filter convolve lonely.hdr out_lonely.nii --kernel 1 2> lonely.err
check "a .hdr without its .img: refused naming it, nothing written" \
  "[ $? -ne 0 ] && grep -q \"'lonely.hdr' is the header of a NIfTI .hdr/.img pair (magic \\\"ni1\\\"), but its data file\" lonely.err && [ ! -e out_lonely.nii ]" ||
  cat lonely.err
cp p1.img orphan.img
"$bin" filter convolve orphan.img out_orphan.nii --kernel 1 2> orphan.err
check "a .img without its .hdr: refused, nothing written" "[ $? -ne 0 ] && [ ! -e out_orphan.nii ]" || cat orphan.err
cp single.nii wrong.hdr && cp p1.img wrong.img
"$bin" filter convolve wrong.img out_wrong.nii --kernel 1 2> wrong.err
check "a .img beside a single-file header: refused naming both, nothing written" \
  "[ $? -ne 0 ] && grep -q \"'wrong.img' names the data file of a .hdr/.img pair, but 'wrong.hdr' is a single-file NIfTI header\" wrong.err && [ ! -e out_wrong.nii ]" ||
  cat wrong.err
exit $fail
