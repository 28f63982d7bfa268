#!/bin/sh
# tests/valgrind.sh - the whole test suite under valgrind (`make
# check-valgrind`; slow, so not part of `make check` or CI): every Check
# program with CK_FORK=no, and every CLI test with clustersim run through
# valgrind. A memory error or a definite leak makes valgrind exit with 97,
# which fails the program or the CLI check that ran it. Prints a line per
# test and a closing "N passed, N failed"; logs go to tests/*/NAME.vg.log.
# Run from the build folder with SRCDIR set (the make target does).
set -u
S=${SRCDIR:-.}
B=$(pwd)
VG="valgrind -q --error-exitcode=97 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite"
pass=0 fail=0
result() {
	if [ "$2" -eq 0 ]; then pass=$((pass + 1)); echo "PASS: $1"
	else fail=$((fail + 1)); echo "FAIL: $1 (exit $2, log $3)"; fi
}
for t in $CHECK_PROGRAMS; do
	CK_FORK=no $VG "$B/$t" >"$B/$t.vg.log" 2>&1
	result "$t" $? "$t.vg.log"
done
# clustersim through valgrind, for the CLI tests.
cat >"$B/tests/vg-clustersim" <<WRAP
#!/bin/sh
exec $VG "$B/clustersim" "\$@"
WRAP
chmod +x "$B/tests/vg-clustersim"
for t in $CLI_TESTS; do
	log="$B/$t.vg.log"
	mkdir -p "$(dirname "$log")"
	CLUSTERSIM="$B/tests/vg-clustersim" SRCDIR="$S" CSVCHECK="$B/tests/cli/csvcheck" \
		sh "$S/$t" >"$log" 2>&1
	result "$t" $? "$t.vg.log"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
