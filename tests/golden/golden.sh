#!/bin/sh
# golden.sh - the outputs that a refactor must keep byte for byte.
#
#   CLUSTERSIM=./clustersim SRCDIR=. sh tests/golden/golden.sh [quick|all|record]
#   GOLDEN_JOBS=N: scenarios hashed N at a time (default 2)
#
# For every shipped scenario (scenarios/*.yaml and scenarios/validation/*.yaml)
# it hashes, with md5:
#   json      `run --json` in the scenario's own fidelity, wall_s removed
#   text      the text report of `run --fidelity analytic --db`
#   timeline  that run's ops view (rank, stream, kind, name, start_ps,
#             end_ps, bytes, flops in id order), read with sqlite3
#   metrics   its metrics table (name, value in name order)
#   ranks     its ranks table
# and, for the plans in PLANS below, `plan --json` with the wall-clock keys
# (wall_s, screened_per_s) removed.  Each line of tests/golden/md5s.txt is
# "SCENARIO KIND EXIT MD5"; a missing or different line fails.  "quick"
# (the default, run by make check through tests/cli/test_golden.sh) checks
# the scenarios listed in QUICK; "all" (make golden-check, a CI stage)
# checks every one; "record" rewrites md5s.txt from the current binary,
# which is only right before a refactor, or after a change meant to change
# an output, once it is shown that nothing else moved (the commit says
# how); never to make a failing check pass.
set -u
CS=${CLUSTERSIM:?set CLUSTERSIM to the clustersim binary}
case $CS in /*) ;; *) CS=$PWD/$CS ;; esac
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
# The text report names the scenario file: run from the source tree with
# ./scenarios/NAME.yaml so the hashes do not depend on where it lies.
cd "${SRCDIR:-.}" || exit 2
SRC=.
mode=${1:-quick}
STORE=$SRC/tests/golden/md5s.txt
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# Scenarios that run in under a second each in both fidelities.
QUICK="ddp-lesson gpt3-1.3b-h200 zero-fsdp-compare llama3-8b-cp8-128k mixtral-8x7b
validation/korthikanti_t5_22B_full validation/megatron_sc21_t1_1.7B
validation/megatron_sc21_t1_7.5B validation/mcore_h100_weak_1.7B
validation/zero_mem_7p5b_nd64_stage0 validation/zero_mem_7p5b_nd64_stage3"
PLANS="gpt3-1.3b-h200:16 ddp-lesson:8"

md5() { md5sum | cut -d' ' -f1; }

# hash NAME: the lines for one scenario, on standard output.
hash_scenario() {
	name=$1 f=$SRC/scenarios/$1.yaml
	"$CS" run "$f" --json >"$T/json" 2>/dev/null; rc=$?
	echo "$name json $rc $(sed 's/,"wall_s":[^,}]*//' "$T/json" | md5)"
	rm -f "$T/db"
	"$CS" run "$f" --fidelity analytic --db "$T/db" >"$T/text" 2>&1; rc=$?
	echo "$name text $rc $(md5 <"$T/text")"
	if [ -f "$T/db" ]; then
		for q in "timeline:SELECT rank, stream, kind, name, start_ps, end_ps, bytes, flops FROM ops ORDER BY id" \
			"metrics:SELECT name, value FROM metrics ORDER BY name" \
			"ranks:SELECT * FROM ranks ORDER BY rank"; do
			echo "$name ${q%%:*} 0 $(sqlite3 "$T/db" "${q#*:}" | md5)"
		done
	fi
}
hash_plan() {
	name=${1%%:*} gpus=${1#*:}
	"$CS" plan "$SRC/scenarios/$name.yaml" --gpus "$gpus" --json >"$T/plan" 2>/dev/null; rc=$?
	echo "$name plan$gpus $rc $(sed 's/"wall_s":[^,}]*,\{0,1\}//; s/"screened_per_s":[^,}]*,\{0,1\}//' "$T/plan" | md5)"
}

all_names() {
	for f in "$SRC"/scenarios/*.yaml "$SRC"/scenarios/validation/*.yaml; do
		n=${f#"$SRC"/scenarios/}; echo "${n%.yaml}"
	done
}
case $mode in
one) hash_scenario "$2"; exit 0 ;;  # one scenario's lines (the workers below)
quick) names=$QUICK ;;
all | record) names=$(all_names) ;;
*) echo "golden.sh: expected quick, all or record, not '$mode'" >&2; exit 2 ;;
esac

# Each scenario in a worker of its own (its own temporary files), its lines
# in part.INDEX; the lines in the scenarios' order.
jobs=${GOLDEN_JOBS:-2}
i=0
for n in $names; do
	i=$((i + 1))
	echo "$n $i"
done >"$T/names"
CLUSTERSIM=$CS SRCDIR=. xargs -P "$jobs" -L 1 \
	sh -c 'exec sh "$0" one "$2" >"$1/part.$3"' "$SELF" "$T" <"$T/names"
missing=0
while read -r n j; do
	grep -q "^$n json " "$T/part.$j" 2>/dev/null || {
		echo "FAIL - $n: its worker wrote no hashes" >&2
		missing=$((missing + 1))
	}
	cat "$T/part.$j" 2>/dev/null
done <"$T/names" >"$T/now"
for p in $PLANS; do hash_plan "$p"; done >>"$T/now"
if [ "$mode" = record ]; then
	cp "$T/now" "$STORE"
	echo "golden.sh: recorded $(wc -l <"$STORE") hashes in $STORE"
	exit 0
fi
pass=0 fail=0
while read -r name kind rc sum; do
	if grep -qx "$name $kind $rc $sum" "$STORE"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		was=$(grep "^$name $kind " "$STORE" || echo "(none stored)")
		echo "FAIL - $name $kind: now exit $rc md5 $sum, stored $was"
	fi
done <"$T/now"
fail=$((fail + missing))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
