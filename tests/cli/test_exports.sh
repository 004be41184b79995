#!/usr/bin/env bash
# Public vs internal: the shared library beside LUMEN_BIN exports exactly what include/lumen/
# declares with LUMEN_API (scripts/check_exports.sh; docs/ARCHITECTURE.md). LUMEN_SHARED_LIB
# overrides the library. Exit 77 (skip) when nm or cc is missing.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
src=${LUMEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
lib=${LUMEN_SHARED_LIB:-$(cd "$(dirname "$bin")" && pwd)/liblumen.so}
for tool in nm "${CC:-cc}"; do
  command -v "$tool" > /dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done
if [ ! -f "$lib" ]; then echo "FAIL: no shared library at $lib (target lumen_shared)"; exit 1; fi
bash "$src/scripts/check_exports.sh" "$lib" "$src/include"
rc=$?
if [ "$rc" -eq 0 ]; then echo "PASS: exports"; exit 0; fi
echo "FAIL: exports (check_exports.sh exit $rc)"
exit 1
