#!/bin/sh
# test_engine_limits.sh - valid configurations at the edges of the engine
# run to the end or stop with a clear error, never with a BUG or a deadlock:
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
