#!/usr/bin/env bash
# Builds the lumen MEX files (lumen_fit, lumen_cuda_available) for Octave (mkoctfile --mex) and,
# when MATLAB is found, for MATLAB (its `mex`), linked to liblumen.so with an rpath to it.
#
# usage: matlab/build_mex.sh [--lib DIR] [--include DIR] [--out DIR] [--octave|--matlab|--both]
#                            [--matlab-cmd PATH] [--mkoctfile PATH]
#   --lib DIR        folder holding liblumen.so (default: build/ beside this script's repo)
#   --include DIR    folder holding lumen/*.h (default: the repo's include/)
#   --out DIR        where the .mex / .mexa64 files go (default: matlab/)
#   --octave         only Octave;  --matlab: only MATLAB;  --both (default): whatever is found
#   --matlab-cmd P   the matlab executable (its bin/ folder holds `mex`); default: matlab on PATH
#   --mkoctfile P    the mkoctfile to use (default: mkoctfile on PATH)
# Beside each MEX file goes NAME.m with the C file's header comment, so that `help lumen_fit`
# shows it (MATLAB and Octave run the MEX file and take the help text from the .m file).
# Exit 0 when at least one MEX flavour was built, 3 when neither Octave nor MATLAB was found,
# 1 when a build failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
lib=$repo/build include=$repo/include out=$here which=both matlab_cmd="" mkoct=""
while [ $# -gt 0 ]; do
  case $1 in
    --lib) lib=$2; shift 2 ;;
    --include) include=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --octave) which=octave; shift ;;
    --matlab) which=matlab; shift ;;
    --both) which=both; shift ;;
    --matlab-cmd) matlab_cmd=$2; shift 2 ;;
    --mkoctfile) mkoct=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "build_mex: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
lib=$(cd "$lib" 2>/dev/null && pwd) || { echo "build_mex: no folder $lib" >&2; exit 1; }
if [ ! -e "$lib/liblumen.so" ] && [ ! -e "$lib/liblumen.dylib" ]; then
  echo "build_mex: no liblumen.so in $lib (build the target lumen_shared first)" >&2; exit 1
fi
mkdir -p "$out"
built=0 failed=0 found=0
srcs=(lumen_fit lumen_cuda_available)

if [ "$which" != matlab ]; then
  [ -n "$mkoct" ] || mkoct=$(command -v mkoctfile || true)
  if [ -n "$mkoct" ]; then
    found=1
    for s in "${srcs[@]}"; do
      if "$mkoct" --mex -o "$out/$s.mex" -I"$include" "$here/$s.c" -L"$lib" -llumen -Wl,-rpath,"$lib" \
           >"$out/$s.octave.log" 2>&1; then
        built=$((built + 1)); rm -f "$out/$s.octave.log" "$out/$s.o"
        echo "build_mex: Octave $out/$s.mex"
      else
        failed=1; echo "build_mex: Octave build of $s failed:" >&2; cat "$out/$s.octave.log" >&2
      fi
    done
  elif [ "$which" = octave ]; then
    echo "build_mex: mkoctfile not found (Debian: apt-get install liboctave-dev)" >&2
  fi
fi

if [ "$which" != octave ]; then
  mex=""
  if [ -n "$matlab_cmd" ]; then
    mex=$(dirname "$(readlink -f "$matlab_cmd")")/mex
  elif command -v matlab >/dev/null 2>&1; then
    mex=$(dirname "$(readlink -f "$(command -v matlab)")")/mex
  fi
  if [ -n "$mex" ] && [ -x "$mex" ]; then
    found=1
    for s in "${srcs[@]}"; do
      if "$mex" -R2018a -outdir "$out" -I"$include" "$here/$s.c" -L"$lib" -llumen \
           LDFLAGS="\$LDFLAGS -Wl,-rpath,$lib" >"$out/$s.matlab.log" 2>&1; then
        built=$((built + 1)); rm -f "$out/$s.matlab.log"
        echo "build_mex: MATLAB $out/$s.$(ls "$out" | grep -o "^$s\.mex[a-z0-9]*" | grep -v '\.mex$' | head -1 | cut -d. -f2)"
      else
        failed=1; echo "build_mex: MATLAB build of $s failed:" >&2; cat "$out/$s.matlab.log" >&2
      fi
    done
  elif [ "$which" = matlab ]; then
    echo "build_mex: MATLAB's mex not found (give --matlab-cmd /path/to/matlab)" >&2
  fi
fi

# NAME.m: the help text (the C file's first comment as % lines); its body runs only where the
# MEX file is missing, and says so
write_help() {
  awk 'NR == 1 { sub(/^\/\* ?/, "") } { done = sub(/ ?\*\/.*$/, ""); sub(/^   /, ""); print "% " $0; if (done) exit }' \
    "$here/$1.c" > "$out/$1.m" || return 1
  printf 'function varargout = %s(varargin)\n  error("lumen:notBuilt", "%s: the MEX file is not built here (matlab/build_mex.sh)");\nend\n' \
    "$1" "$1" >> "$out/$1.m"
}
if [ $built -gt 0 ]; then
  for s in "${srcs[@]}"; do write_help "$s" || { echo "build_mex: cannot write $out/$s.m" >&2; failed=1; }; done
fi

[ $failed -ne 0 ] && exit 1
[ $found -eq 0 ] && { echo "build_mex: neither Octave (mkoctfile) nor MATLAB (mex) found" >&2; exit 3; }
[ $built -gt 0 ] || exit 1
exit 0
