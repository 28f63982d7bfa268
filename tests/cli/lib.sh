# lib.sh - the start every CLI test shares, sourced as its first command:
#   . "${SRCDIR:-.}/tests/cli/lib.sh"
# CS is the clustersim binary ($CLUSTERSIM), SRC the source tree ($SRCDIR),
# T a temporary directory removed at exit; ok and bad count and print a
# check; finish, the script's last command, prints "N passed, N failed" and
# fails if any check did.
set -u
CS=${CLUSTERSIM:?set CLUSTERSIM to the clustersim binary}
SRC=${SRCDIR:-.}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
