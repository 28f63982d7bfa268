#!/bin/sh
# test_fixes.sh - classes the valid-space fuzz target found: what only the
# simulation builds is bounded before it is built, and a layout that does
# not fit is reported without building it. Run by `make check` with
# CLUSTERSIM and SRCDIR set; prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"

# 1.3e14 parameters with ZeRO-2's default 25 MiB buckets would be 10 million
# parameter all-gathers: the memory check comes first and needs none of them.
cat >"$T/huge.yaml" <<'YAML'
cluster: {preset: ideal, nodes: 10}
model: {layers: 2, hidden: 65536, heads: 2, vocab: 1000000000}
training: {seq: 2048, global_batch: 10}
parallel: {zero: 2}
sim: {fidelity: analytic}
YAML
# timeout is only a guard against a hang (it built 10 million collectives
# first, minutes under the sanitizers); the test asserts no wall time.
timeout 120 "$CS" run "$T/huge.yaml" --db "$T/huge.db" >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" -eq 3 ] && grep -q "out of memory" "$T/err"; then
	ok "a huge ZeRO-2 model that does not fit: exit 3"
else bad "huge ZeRO-2 model: exit $rc: $(head -c 300 "$T/err")"; fi
[ -e "$T/huge.db" ] && bad "the huge model left a database" || ok "the huge model stored nothing"

# A 1 B bucket on a model that does not fit: nothing is built, exit 3.
timeout 60 "$CS" run "$T/huge.yaml" --set parallel.ddp.bucket=1B >/dev/null 2>"$T/err"
rc=$?
[ "$rc" -eq 3 ] && ok "1 B buckets on a model that does not fit: exit 3" ||
	bad "1 B buckets, no fit: exit $rc: $(head -c 300 "$T/err")"

# The limit is exact: the bucket it names is accepted, one byte less is not.
cat >"$T/small.yaml" <<'YAML'
cluster: {preset: ideal, nodes: 2}
model: {layers: 1, hidden: 1024, heads: 8, vocab: 512}
training: {seq: 1024, global_batch: 2}
parallel: {zero: 1, ddp: {bucket: 1B}}
sim: {fidelity: analytic}
YAML
"$CS" run "$T/small.yaml" >/dev/null 2>"$T/err"
need=$(sed -n 's/.*use a bucket of at least \([0-9][0-9]*\) B$/\1/p' "$T/err")
if [ -n "$need" ] && timeout 60 "$CS" run "$T/small.yaml" --set parallel.ddp.bucket="${need}B" >/dev/null 2>&1 &&
   ! "$CS" run "$T/small.yaml" --set parallel.ddp.bucket="$((need - 1))B" >/dev/null 2>&1; then
	ok "the smallest bucket the message names ($need B) runs, $((need - 1)) B does not"
else bad "bucket limit: '$need' from: $(head -c 300 "$T/err")"; fi

# With overlap_param_gather the gathers hold whole layers: no limit applies.
timeout 60 "$CS" run "$T/small.yaml" --set parallel.ddp.overlap_param_gather=true >/dev/null 2>"$T/err" &&
	ok "1 B buckets with overlap_param_gather (whole-layer gathers) run" ||
	bad "overlap_param_gather with 1 B buckets: $(head -c 300 "$T/err")"

# A sweep names the 1 B point invalid with the reason and runs the other.
timeout 120 "$CS" sweep "$T/small.yaml" --vary parallel.ddp.bucket=1B,1MiB >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "^1B .*invalid: parallel.ddp.bucket: 1 B gives" "$T/out" &&
   grep -q "^1MiB .* ok$" "$T/out"; then
	ok "sweep: the 1 B point is invalid with the reason, the 1 MiB one runs"
else bad "sweep with a 1 B point: exit $rc: $(head -c 300 "$T/out") $(head -c 300 "$T/err")"; fi

# An explicit algorithm that cannot run on some candidate's groups (hd on
# 3 or 6 ranks) is refused for that candidate before it simulates, with the
# key; the others still rank.
timeout 120 "$CS" plan "$T/small.yaml" --gpus 6 -j 1 --analytic 64 --top 1 \
	--set cluster.nodes=6 --set training.global_batch=6 --set parallel.ddp.bucket=25MiB \
	--set parallel.algorithms.allreduce=hd >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "failed: parallel.algorithms.allreduce: hd cannot run" "$T/err" &&
   ! grep -q "could not finish\|failed: collective" "$T/err" && grep -q "^1 " "$T/out"; then
	ok "plan: candidates hd cannot run on are refused with the key, the rest rank"
else bad "plan with hd: exit $rc: $(head -c 400 "$T/err")"; fi

# ZeRO-3 by module under GPipe's order without a pipeline: every
# micro-batch's forward comes before the first backward, so a backward's
# fetches start again instead of running past the fetch sequence (it
# aborted on a BUG); the forwards' prefetches are let go on an op of their
# own (on the op before they overwrote its memory change: the logits).
for sched in gpipe 1f1b; do
	"$CS" run "$T/small.yaml" --set parallel.zero=3 --set parallel.schedule=$sched \
		--set training.global_batch=8 --set model.layers=4 --json >"$T/z3-$sched" 2>"$T/err"
	rc=$?
	[ "$rc" -eq 0 ] && ok "ZeRO-3 with $sched's order, four micro-batches: runs" ||
		bad "ZeRO-3 with $sched: exit $rc: $(head -c 300 "$T/err")"
done
mem() { sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p" "$2" | head -1; }
if awk -v g="$(mem weights "$T/z3-gpipe")" -v o="$(mem weights "$T/z3-1f1b")" \
	-v l="$(mem logits "$T/z3-gpipe")" 'BEGIN { exit !(g > 0 && o > 0 && g < 1.1 * o && l >= 0) }'
then ok "ZeRO-3 under GPipe: the weights at the peak as 1F1B's, within a tenth; no negative logits"
else bad "ZeRO-3 under GPipe: weights $(mem weights "$T/z3-gpipe") (1F1B $(mem weights "$T/z3-1f1b")), logits $(mem logits "$T/z3-gpipe")"; fi
finish
