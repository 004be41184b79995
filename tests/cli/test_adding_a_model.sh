#!/usr/bin/env bash
# docs/ADDING_A_MODEL.md's promise, held mechanically: a new model is a row of the table
# (include/lumen/models.h), its math (src/models/model_impl.inc) and a test, and nothing else is
# edited. In a scratch copy of the tree this applies the doc's worked example (t2) with the code
# blocks taken from the doc itself (marked <!-- t2-... -->, so the doc and this test cannot drift),
# checks that exactly the three promised files differ from the tree, configures a CPU-only build
# (CUDA, I/O, MPI off) with the build's own compiler, builds the library's tests of the models and
# the fits (the new test_models_t2 among them) and runs them. A model that needed an edit
# anywhere else (a dispatch switch, a model list in a test) fails to build or fails a test here.
# A few minutes on 2 cores; skips (77) without cmake, a C compiler or cmocka.
set -u
src=${LUMEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${LUMEN_BIN:-}
build=${bin:+$(cd "$(dirname "$bin")" && pwd)}
cache=${build:+$build/CMakeCache.txt}
cmake=$(command -v cmake || true)
cc=
if [ -n "$cache" ] && [ -f "$cache" ]; then
  c=$(sed -n 's/^CMAKE_COMMAND:[A-Z]*=//p' "$cache"); [ -x "$c" ] && cmake=$c
  cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$cache")
fi
[ -n "$cc" ] || cc=$(command -v cc || command -v gcc || true)
[ -n "$cmake" ] && [ -n "$cc" ] || { echo "SKIP: no cmake or C compiler"; exit 77; }
PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIP: no python3 (applies the doc's blocks)"; exit 77; }
bin=${bin:-/bin/true} # lib.sh wants one; no lumen binary is run here
. "$(dirname "$0")/lib.sh"

# the tree as it stands (tracked and new files alike; no build folders, no .git)
mkdir tree
(cd "$src" && tar -cf - --exclude='./build*' --exclude=./.git --exclude='*/__pycache__' \
  CMakeLists.txt cmake include src tests) | (cd tree && tar -xf -) ||
  { echo "FAIL: copying the tree"; exit 1; }
cp -r tree orig
# the example must be new to the tree: a t2 that ships needs another example in the doc
if grep -q 'LUMEN_MODEL_T2\b' tree/include/lumen/models.h; then
  echo "FAIL: the tree already has LUMEN_MODEL_T2: give docs/ADDING_A_MODEL.md another worked example"
  exit 1
fi

# the doc's steps, with the doc's blocks
"$PY" - "$src/docs/ADDING_A_MODEL.md" tree <<'PYEOF' > apply.txt 2>&1 || { cat apply.txt; echo "FAIL: applying the doc"; exit 1; }
import re, sys, textwrap
doc, tree = open(sys.argv[1]).read(), sys.argv[2]
def block(mark):
    m = re.search(r'<!-- %s -->\s*\n\s*```c\n(.*?)\n\s*```' % re.escape(mark), doc, re.S)
    if not m: sys.exit("no block <!-- %s --> in the doc" % mark)
    return textwrap.dedent(m.group(1)) + '\n'
def insert_before(text, anchor, add, last=False):
    i = text.rfind(anchor) if last else text.find(anchor)
    if i < 0: sys.exit("anchor not found: %r" % anchor)
    return text[:i] + add + text[i:]
# 1. the row, appended to LUMEN_MODEL_TABLE (a '\' added to the last row), and the two lists
p = tree + '/include/lumen/models.h'
lines = open(p).read().split('\n')
i = next(k for k, l in enumerate(lines) if l.startswith('#define LUMEN_MODEL_TABLE(X)'))
while lines[i].endswith('\\'): i += 1
lines[i] = lines[i].ljust(109) + '\\'
row = block('t2-row').rstrip('\n').split('\n')
lines[i + 1:i + 1] = ['  ' + l if l.strip() else l for l in row]
text = '\n'.join(lines)
j = text.index('#define LUMEN_D_AUC(F)'); j = text.index('\n', j) + 1
text = text[:j] + block('t2-lists') + text[j:]
open(p, 'w').write(text)
# 2. the math: the evaluation after the other models', the start and the derived value at the
# end of the scalar part (before the #endif that closes it, above the dispatch section)
p = tree + '/src/models/model_impl.inc'
text = open(p).read()
text = insert_before(text, "/* ====================================================================== rows sharing", block('t2-eval') + '\n')
d = text.index('/* ====================================================================== dispatch')
e = text.rfind('#endif /* !LT_VECTOR */', 0, d)
if e < 0: sys.exit("no #endif /* !LT_VECTOR */ before the dispatch section")
text = text[:e] + block('t2-scalar') + '\n' + text[e:]
open(p, 'w').write(text)
# 3. the test
open(tree + '/tests/unit/test_models_t2.c', 'w').write(block('t2-test'))
print("applied")
PYEOF

# only the promised files differ
diff -rq orig tree > changed.txt
check "the doc's three files differ, and nothing else" \
  "[ \"\$(sed -e 's|^Files orig/\\([^ ]*\\) and .*|\\1|' -e 's|^Only in tree/\\(.*\\): \\(.*\\)|\\1/\\2|' changed.txt | sort | tr '\n' ' ')\" = \
'include/lumen/models.h src/models/model_impl.inc tests/unit/test_models_t2.c ' ]" || cat changed.txt

# a CPU-only build of the library's model and fit tests
tests="test_models_t2 test_models_linear test_models_jacobian test_models_ode test_fit_analytic test_fit_bounds"
"$cmake" -S tree -B b -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" -DLUMEN_CUDA=OFF -DLUMEN_IO=OFF \
  -DLUMEN_MPI=OFF -DLUMEN_DICOM=OFF -DLUMEN_TESTS=ON > configure.txt 2>&1 ||
  { cat configure.txt; echo "FAIL: configure"; exit 1; }
grep -q "cmocka not found" configure.txt && { echo "SKIP: no cmocka (unit tests not built)"; exit 77; }
jobs=$(nproc 2>/dev/null || echo 2)
"$cmake" --build b -j"$jobs" --target $tests > build.txt 2>&1
check "the tree with t2 builds (the dispatch has its case, nothing else to edit)" \
  "[ -x b/tests/test_models_t2 ]" || { grep -B2 -A6 -E 'error|Error' build.txt | head -60; exit 1; }
for t in $tests; do
  check "$t passes with t2 in the table" "(cd b/tests && ./$t > $t.txt 2>&1)" || tail -30 "b/tests/$t.txt"
done
exit $fail
