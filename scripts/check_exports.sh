#!/usr/bin/env bash
# Public vs internal (docs/ARCHITECTURE.md): liblumen.so must export exactly what include/lumen/
# declares with LUMEN_API.
#   scripts/check_exports.sh [--quiet] LIBLUMEN_SO [INCLUDE_DIR]
# INCLUDE_DIR defaults to the include/ folder beside this script's repo.
# Fails (exit 1) when
#   - the library exports a symbol that no header in include/lumen/ declares with LUMEN_API
#     (an internal function, a CUDA helper, a test hook, a symbol of a static library linked in), or
#   - a function declared in the headers of the core API (those lumen/lumen.h includes: the API
#     of liblumen.so, which the Python binding and MEX call) is not exported (LUMEN_API missing,
#     or the definition does not see its declaration).
# Functions of include/lumen/io.h (in liblumen.so only when the I/O module is built) and
# pipeline.h (static lumen_pipeline) may be absent from liblumen.so; they are counted, not required.
# The declared names come from the C preprocessor (comments and #if handled) with LUMEN_API
# replaced by a marker. Needs nm and cc. Exit 2: usage or a missing tool.
set -euo pipefail
quiet=0
if [ "${1:-}" = "--quiet" ]; then quiet=1; shift; fi
lib=${1:?usage: check_exports.sh [--quiet] LIBLUMEN_SO [INCLUDE_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
inc=${2:-$(dirname "$here")/include}
cc=${CC:-cc}
for tool in nm "$cc"; do
  command -v "$tool" > /dev/null 2>&1 || { echo "check_exports: $tool not found" >&2; exit 2; }
done
[ -f "$lib" ] || { echo "check_exports: no library $lib" >&2; exit 2; }
[ -d "$inc/lumen" ] || { echo "check_exports: no folder $inc/lumen" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Names declared with LUMEN_API in the given headers: the identifier before the first '(' of a
# function declaration, or the last identifier of a data declaration.
declared() {
  local h
  for h in "$@"; do
    "$cc" -E -P -I"$inc" -D'LUMEN_API=__lumen_api_marker__' -x c "$h" || return 1
  done | tr '\n' ' ' | tr ';{}' '\n\n\n' | grep '__lumen_api_marker__' | sed -E '
      s/__attribute__ *\(\(.*\)\)//
      /\(/ { s/^([^(]*)\(.*/\1/; s/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*) *$/\1/; b }
      s/\[.*//; s/=.*//; s/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*) *$/\1/' | sort -u
}

all_headers=()
for h in "$inc"/lumen/*.h; do all_headers+=("$h"); done
declared "${all_headers[@]}" > "$work/declared" || { echo "check_exports: cc -E failed on $inc/lumen" >&2; exit 2; }
declared "$inc/lumen/lumen.h" > "$work/core" || { echo "check_exports: cc -E failed on lumen.h" >&2; exit 2; }
# Defined dynamic symbols, version suffixes and the linker's own symbols left out.
nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' \
  | grep -Ev '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u > "$work/exported"

comm -23 "$work/exported" "$work/declared" > "$work/extra"
comm -23 "$work/core" "$work/exported" > "$work/missing"
n_exp=$(wc -l < "$work/exported")
n_decl=$(wc -l < "$work/declared")
n_core=$(wc -l < "$work/core")
n_extra=$(wc -l < "$work/extra")
n_missing=$(wc -l < "$work/missing")
status=0
if [ "$n_extra" -gt 0 ]; then
  echo "check_exports: FAIL: $lib exports $n_extra symbol(s) that include/lumen/ does not declare with LUMEN_API:"
  sed 's/^/  /' "$work/extra"
  echo "  (make them static, or leave them hidden; a public function needs LUMEN_API in include/lumen/)"
  status=1
fi
if [ "$n_missing" -gt 0 ]; then
  echo "check_exports: FAIL: $n_missing function(s) of the core API (lumen/lumen.h) are not exported by $lib:"
  sed 's/^/  /' "$work/missing"
  echo "  (is LUMEN_API on the declaration, and does the defining file include that header?)"
  status=1
fi
if [ "$status" -eq 0 ] && [ "$quiet" -eq 0 ]; then
  echo "check_exports: OK: $lib exports $n_exp symbols, all declared in include/lumen/" \
       "($n_decl declared with LUMEN_API, $n_core of them in the core API, all exported)"
fi
exit "$status"
