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
#   - times past the int64 picosecond clock (2^63 ps, about 106.75 days): a
#     huge latency, a tiny bandwidth or efficiency, a fault factor of
#     1e-300, `collective --bw 1B/s`: exit 2 naming the clock's limit, the
#     run stored as failed;
#   - gamma variability at its documented maximum (cv 10), whose draws
#     underflow to 0;
#   - the memory line says that the breakdown is taken at the peak and the
#     model states are held from the start, in run and in report.
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
# (Its tensors peak at 81.3 GB of 85.5: no room for the reserve beyond them,
# which this test of the engine's limits leaves out.)
runs "Llama 3 405B, 16,384 H100, seq 131072, tp 8, cp 16, pp 16, vpp 2, dp 8" \
	"$SRC/scenarios/llama3-405b-h100x16384.yaml" --set training.seq=131072 \
	--set parallel.cp=16 --set parallel.dp=8 --set training.global_batch=128 \
	--fidelity analytic --record none --set sim.symmetry=dp --set cluster.memory_reserve=0

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

# ---- the clock's range ------------------------------------------------------------
# clock NAME COMMAND...: exits 2, names the limit, no BUG.
clock() {
	name=$1; shift
	"$CS" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q "simulated clock's limit of 106.75 days" "$T/err" &&
	   ! grep -q BUG "$T/err"; then ok "$name: exit 2, past the clock"
	else bad "$name: exit $rc: $(head -c 300 "$T/err")"; fi
}
clock "network latency 1e9 s" run "$B" --set cluster.nodes=2 --set training.global_batch=16 \
	--set cluster.network.latency=1e9s
clock "NVLink latency 1e9 s" run "$B" --set cluster.nvlink.latency=1e9s
clock "NVLink bandwidth 1 B/s" run "$B" --set cluster.nvlink.bandwidth=1B/s
clock "NVLink bandwidth 1 B/s, analytic" run "$B" --set cluster.nvlink.bandwidth=1B/s \
	--fidelity analytic
clock "network bandwidth 1 B/s" run "$B" --set cluster.nodes=2 --set training.global_batch=16 \
	--set cluster.network.bandwidth=1B/s
clock "compute.efficiency 1e-12" run "$B" --set compute.efficiency=1e-12
clock "compute.efficiency 1e-12, analytic" run "$B" --set compute.efficiency=1e-12 \
	--fidelity analytic
clock "a fault factor of 1e-300" run "$B" --set cluster.faults=node0.gpu2.nvlink=1e-300
clock "collective --bw 1B/s" collective -n 4 --bw 1B/s
clock "collective --bw 1B/s, analytic" collective -n 4 --bw 1B/s --fidelity analytic
clock "collective --alpha 1e9s" collective -n 4 --alpha 1e9s
"$CS" run "$B" --set compute.efficiency=1e-12 >/dev/null 2>"$T/err"
grep -q "op 'embed.mb0.fwd.embed'" "$T/err" && ok "the message names the op" ||
	bad "the op is not named: $(cat "$T/err")"
"$CS" run "$B" --set cluster.nvlink.bandwidth=1B/s >/dev/null 2>"$T/err"
grep -q "a transfer of [0-9]* bytes from rank [0-9]* to rank [0-9]* (started at [0-9.e+-]* s; latency 1e-06 s, 1 B/s)" "$T/err" &&
	ok "the message names the transfer" || bad "the transfer is not named: $(cat "$T/err")"
# A sequence of 1e9 tokens: its kernels' times saturate, the memory check
# answers first (exit 3), no BUG.
"$CS" run "$B" --set training.seq=1000000000 >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 3 ] && ! grep -q BUG "$T/err" && ok "training.seq 1e9: out of memory, exit 3" ||
	bad "training.seq 1e9: exit $rc: $(cat "$T/err")"
# Stored: the run is marked failed with the message; nothing else is left.
"$CS" run "$B" --set compute.efficiency=1e-12 --db "$T/c.db" >/dev/null 2>&1
if command -v sqlite3 >/dev/null 2>&1; then
	st=$(sqlite3 "$T/c.db" "select status from runs where error like '%simulated clock%'")
	n=$(sqlite3 "$T/c.db" "select count(*) from timeline")
	[ "$st" = failed ] && [ "$n" = 0 ] && ok "the stored run is failed, with the message" ||
		bad "stored: status '$st', $n timeline rows"
fi

# ---- gamma variability at its maximum ----------------------------------------------
for seed in 1 2 3; do
	runs "gamma jitter cv 10, seed $seed" "$B" --set variability.jitter=gamma \
		--set variability.jitter_cv=10 --set sim.seed=$seed --steps 3
done
runs "gamma jitter and GPU speed cv 10" "$B" --set variability.jitter=gamma \
	--set variability.jitter_cv=10 --set variability.gpu=gamma --set variability.gpu_cv=10 \
	--steps 3
runs "lognormal jitter and GPU speed cv 10" "$B" --set variability.jitter=lognormal \
	--set variability.jitter_cv=10 --set variability.gpu=lognormal \
	--set variability.gpu_cv=10 --steps 3

# ---- the memory line -----------------------------------------------------------------
"$CS" run "$T/sym.yaml" --fidelity analytic --db "$T/m.db" >"$T/m.txt" 2>"$T/err" ||
	bad "ZeRO-3 run: $(cat "$T/err")"
grep -q "; model states [0-9.]* GB held from the start$" "$T/m.txt" &&
	grep -q "^             at the peak: weights [0-9.]* GB, grads" "$T/m.txt" &&
	ok "run: model states held from the start, the breakdown at the peak" ||
	bad "run's memory line: $(grep -A1 memory "$T/m.txt")"
"$CS" report "$T/m.db" >"$T/r.txt" 2>"$T/err" || bad "report: $(cat "$T/err")"
[ "$(grep -A1 "^  memory" "$T/m.txt")" = "$(grep -A1 "^  memory" "$T/r.txt")" ] &&
	ok "report: the same memory lines" || bad "report's memory lines differ: $(grep -A1 memory "$T/r.txt")"
finish
