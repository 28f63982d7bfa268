#!/bin/sh
# test_input.sh - input read once and nonsense refused: a scenario from a
# pipe, a FIFO or /dev/stdin runs as from a file (it was opened twice: a
# false error, or a hang); 100,000 keys with a twin at the end are read and
# the twin named with its first line (a hash set, not a scan per key);
# parallel.tp_across_nodes prints its warning on stderr; a description of
# 127 characters is stored whole; calibrate gemm refuses a column named
# twice and a time whose efficiency rounds to 0, naming the line. Run by
# `make check` with CLUSTERSIM and SRCDIR set; prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
command -v sqlite3 >/dev/null 2>&1 || { bad "sqlite3 is not installed"; finish; exit 1; }
B=$SRC/tests/badinput/base.yaml
to=
command -v timeout >/dev/null 2>&1 && to="timeout 60"
run_a() { $to "$CS" run "$@" --set sim.fidelity=analytic; }

run_a "$B" --json >"$T/file.json" 2>"$T/err" || bad "from the file: $(cat "$T/err")"
step() { sed -n 's/.*"step_time_s":\([0-9.e+-]*\).*/\1/p' "$1" | head -1; }
want=$(step "$T/file.json")

# The same scenario through a pipe, /dev/stdin and a FIFO.
cat "$B" | run_a /dev/stdin --json >"$T/pipe.json" 2>"$T/err"
[ $? = 0 ] && [ "$(step "$T/pipe.json")" = "$want" ] && ok "a pipe (cat | run /dev/stdin) runs it" ||
	bad "pipe: $(cat "$T/err")"
run_a /dev/stdin --json <"$B" >"$T/stdin.json" 2>"$T/err"
[ $? = 0 ] && [ "$(step "$T/stdin.json")" = "$want" ] && ok "run /dev/stdin < file runs it" ||
	bad "/dev/stdin: $(cat "$T/err")"
if mkfifo "$T/fifo" 2>/dev/null; then
	cat "$B" >"$T/fifo" &
	run_a "$T/fifo" --json >"$T/fifo.json" 2>"$T/err"
	rc=$?
	wait
	[ $rc = 0 ] && [ "$(step "$T/fifo.json")" = "$want" ] && ok "a FIFO runs it (read once)" ||
		bad "FIFO: exit $rc: $(cat "$T/err")"
fi

# Many keys: a twin at the end is found and named, none other.
{
	cat "$B"
	echo "extra:"
	awk 'BEGIN { for (i = 0; i < 100000; i++) printf "  k%d: 1\n", i; print "  k99999: 2" }'
} >"$T/many.yaml"
"$CS" run "$T/many.yaml" >/dev/null 2>"$T/err"
rc=$?
line=$(awk '/^  k99999: 1$/ { print NR }' "$T/many.yaml")
[ $rc = 2 ] && grep -q "many.yaml:$((line + 1)): extra.k99999 is given twice (first on line $line)" "$T/err" &&
	ok "100,000 keys: the twin at the end is named with its first line" ||
	bad "many keys: exit $rc: $(head -c 300 "$T/err")"
sed '$d' "$T/many.yaml" >"$T/many1.yaml"
"$CS" run "$T/many1.yaml" >/dev/null 2>"$T/err"
grep -q "unknown key extra.k0" "$T/err" && ok "100,000 distinct keys: no false twin" ||
	bad "distinct keys: $(head -c 300 "$T/err")"

# parallel.tp_across_nodes: the warning the docs promise, on stderr only.
run_a "$SRC/tests/badinput/layout-tp-across-nodes.yaml" --set parallel.tp_across_nodes=true \
	>"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] && grep -q "clustersim run: warning: .*layout-tp-across-nodes.yaml: parallel.tp: groups of 16 do not fit the NVLink domains of 8 GPUs" "$T/err" &&
	! grep -q warning "$T/out" && ok "tp_across_nodes: a warning on stderr" ||
	bad "tp_across_nodes: exit $rc: $(cat "$T/err")"

# A description at its limit is stored whole.
d=$(awk 'BEGIN { for (i = 0; i < 127; i++) printf "d" }')
run_a "$B" --set "model.description=$d" --db "$T/d.db" >/dev/null 2>"$T/err" || bad "127: $(cat "$T/err")"
sqlite3 "$T/d.db" "select config from runs" | grep -q "\"model.description\":\"$d\"" &&
	ok "a description of 127 characters is stored whole" || bad "description cut"

# calibrate gemm: a column named twice, a time that rounds the efficiency to 0.
G=$SRC/scenarios/calibration/h200/gemm.csv
tr -d '\r' <"$G" | awk 'NR == 1 { print $0 ",ms"; next } { print $0 ",1" }' >"$T/twice.csv"
"$CS" calibrate gemm "$T/twice.csv" --gpu H200-SXM-141GB >/dev/null 2>"$T/err"
rc=$?
[ $rc = 2 ] && grep -q "twice.csv:1: column 'ms' is named twice" "$T/err" &&
	ok "calibrate gemm: a column named twice is refused" || bad "twice: exit $rc: $(cat "$T/err")"
awk -F, 'BEGIN { OFS = "," } NR == 2 { $11 = "1e308" } { print }' "$G" >"$T/slow.csv"
"$CS" calibrate gemm "$T/slow.csv" --gpu H200-SXM-141GB >/dev/null 2>"$T/err"
rc=$?
[ $rc = 2 ] && grep -q "slow.csv:2: 0 of the H200-SXM-141GB's datasheet bf16 peak" "$T/err" &&
	ok "calibrate gemm: a GEMM time of 1e308 ms is refused at its line" ||
	bad "1e308: exit $rc: $(cat "$T/err")"
finish
