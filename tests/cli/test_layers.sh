#!/usr/bin/env bash
# The layering of src/ (issue 16, docs/ARCHITECTURE.md): scripts/check_layers.py passes on the
# tree and fails, naming the file and both layers, when a lower layer includes a higher one.
set -u
src=${LUMEN_SOURCE_DIR:?LUMEN_SOURCE_DIR not set}
bin=none # this test runs no lumen
. "$(dirname "$0")/lib.sh"
py=$(command -v python3) || { echo "FAIL: python3 not found"; exit 1; }
"$py" "$src/scripts/check_layers.py" "$src" > out.txt 2>&1; rc=$?
cat out.txt
check "the tree keeps its layers (exit $rc)" "[ $rc -eq 0 ] && grep -q '^ok: .* 0 layering violations' out.txt"
# the check can fail: a copy where core includes the command line, and a public header a src one
mkdir -p copy && cp -R "$src/src" "$src/include" copy/
echo '#include "cli/cli.h"' >> copy/src/core/context.c
echo '#include "core/internal.h"' >> copy/include/lumen/status.h
"$py" "$src/scripts/check_layers.py" copy > out2.txt 2>&1; rc=$?
cat out2.txt
check "an upward include is refused (exit $rc), naming the file and the layers" \
  "[ $rc -eq 1 ] && grep -q 'src/core/context.c (layer 1 core) includes \"cli/cli.h\" (layer 7 cli)' out2.txt"
check "a public header that includes a src header is refused" \
  "grep -q 'include/lumen/status.h: a public header includes \"core/internal.h\"' out2.txt"
exit $fail
