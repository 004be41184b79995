# Shared start of the CLI tests, sourced right after `set -u` and the script's own preconditions:
# fail=0, a scratch folder $tmp that becomes the working directory and is removed on exit (made
# writable first: some tests write-protect files in it), and `check NAME CONDITION`, which prints
# ok/FAIL and sets fail=1 when the (eval'd) condition is false; it then returns 1, so that
# `check ... || cat err.txt` shows the error of a failing check.
fail=0
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; return 1; fi; }
# need_test_hooks: the fault-injection hooks (LUMEN_TEST_* variables) are compiled into test builds
# only; against another build the test fails, saying so, instead of passing without them.
need_test_hooks() {
  "$bin" --version 2>/dev/null | grep -q "test hooks" && return 0
  echo "FAIL: $bin has no test hooks (configure with -DLUMEN_TEST_HOOKS=ON; make test does)"
  exit 1
}
