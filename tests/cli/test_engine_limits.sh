#!/bin/sh
# test_engine_limits.sh - valid configurations at the edges of the engine
# run to the end or stop with a clear error, never with a BUG or a deadlock:
#   - context parallelism 16 with the contiguous ring: a rank idled by the
#     causal mask waits for every block it received meanwhile, more than
#     any fixed list held (with ZeRO-3, DDP, FSDP), and the GPT-3 175B and
#     Llama 3 405B long-context layouts that hit it;
#   - sim.symmetry dp with the sharded strategies (ZeRO-3, FSDP, HSDP),
#     whose first op is a collective joined as the rank starts: it runs,
#     and in analytic fidelity gives the exact step;
# Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
num() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
B=$SRC/tests/badinput/base.yaml
# runs NAME ARGS...: clustersim run ARGS exits 0, the JSON report in $T/NAME.json.
runs() {
	name=$1; shift
	"$CS" run "$@" --json >"$T/$name.json" 2>"$T/$name.err"
	rc=$?
	[ $rc -eq 0 ] && ok "$name runs" || bad "$name: exit $rc: $(head -c 300 "$T/$name.err")"
}

# ---- waits: CP 16, contiguous ring ------------------------------------------
cat >"$T/cp16.yaml" <<EOF
cluster: {preset: dgx-h100, nodes: 2}
model: {preset: gpt3-1.3b, layers: 4}
training: {seq: 32768, global_batch: 1, micro_batch: 1}
parallel: {cp: 16, cp_algo: ring, zero: 3}
EOF
runs "cp 16 ring, ZeRO-3, flow" "$T/cp16.yaml"
runs "cp 16 ring, ZeRO-3, analytic" "$T/cp16.yaml" --fidelity analytic
runs "cp 16 ring, DDP" "$T/cp16.yaml" --fidelity analytic --set parallel.zero=0
runs "cp 16 ring, FSDP" "$T/cp16.yaml" --fidelity analytic --set parallel.zero=0 \
	--set parallel.fsdp.enabled=true
# GPT-3 175B on 1,024 A100 as `plan` proposed it, and Llama 3 405B's
# long-context layout (table 4 of the paper), one replica simulated.
cat >"$T/gpt3.yaml" <<EOF
cluster: {preset: dgx-a100, nodes: 128}
model: {preset: gpt3-175b}
training: {seq: 2048, global_batch: 1536, micro_batch: 24}
parallel: {tp: 4, sp: true, cp: 16, dp: 16, zero: 3}
sim: {fidelity: analytic, record: none, symmetry: dp}
EOF
runs "GPT-3 175B, tp 4, sp, cp 16, dp 16, ZeRO-3, micro-batch 24" "$T/gpt3.yaml"
runs "Llama 3 405B, 16,384 H100, seq 131072, tp 8, cp 16, pp 16, vpp 2, dp 8" \
	"$SRC/scenarios/llama3-405b-h100x16384.yaml" --set training.seq=131072 \
	--set parallel.cp=16 --set parallel.dp=8 --set training.global_batch=128 \
	--fidelity analytic --record none --set sim.symmetry=dp

# ---- sim.symmetry dp with sharded parameters ------------------------------------
cat >"$T/sym.yaml" <<EOF
cluster: {preset: dgx-h100, nodes: 2}
model: {preset: gpt3-1.3b, layers: 4}
training: {seq: 2048, global_batch: 16, micro_batch: 1}
parallel: {tp: 2, zero: 3}
EOF
for s in "zero3:--set parallel.zero=3" \
	 "fsdp:--set parallel.zero=0 --set parallel.fsdp.enabled=true" \
	 "hsdp:--set parallel.zero=0 --set parallel.tp=1 --set parallel.fsdp.enabled=true --set parallel.fsdp.hsdp=true"; do
	sn=${s%%:*} args=${s#*:}
	# shellcheck disable=SC2086 # args are words
	runs "$sn exact" "$T/sym.yaml" $args --fidelity analytic
	# shellcheck disable=SC2086
	runs "$sn collapsed" "$T/sym.yaml" $args --fidelity analytic --set sim.symmetry=dp
	# shellcheck disable=SC2086
	runs "$sn collapsed, flow" "$T/sym.yaml" $args --set sim.symmetry=dp
	a=$(num "$T/$sn exact.json" step_time_s) b=$(num "$T/$sn collapsed.json" step_time_s)
	[ -n "$a" ] && [ "$a" = "$b" ] && ok "$sn: the collapsed analytic step is the exact one ($a s)" ||
		bad "$sn: collapsed $b s, exact $a s"
done

finish
