#!/bin/sh
# test_sharing.sh - analytic fidelity where collectives of different groups
# share links (sim.analytic_sharing, sim/share.c): on every contended case
# below, all variants of scenarios/zero-fsdp-compare.yaml where tensor
# parallelism puts several data-parallel groups behind one NIC (or a NIC
# behind too few), analytic is within 5 % of flow; with sharing off it is
# more than 1 % below flow (the case is contended: the check can fail).
# bench/sharing.sh prints the whole grid. Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
SC="$SRC/scenarios/zero-fsdp-compare.yaml"

# step FIDELITY SETS...: the step time.
step() {
	fid=$1; shift
	args=""
	for s in "$@"; do args="$args --set $s"; done
	# shellcheck disable=SC2086
	"$CS" run "$SC" --fidelity "$fid" $args --json 2>"$T/e" |
		sed -n 's/.*"step_time_s":\([-0-9.e+]*\).*/\1/p'
}

# case NAME SETS...: analytic within 5 % of flow, and contended.
case_() {
	name=$1; shift
	f=$(step flow "$@") a=$(step analytic "$@") o=$(step analytic sim.analytic_sharing=false "$@")
	if [ -z "$f" ] || [ -z "$a" ] || [ -z "$o" ]; then
		bad "$name: a run failed: $(cat "$T/e")"
		return
	fi
	if awk "BEGIN { e = ($a - $f) / $f; exit !(e < 0.05 && e > -0.05) }"; then
		ok "$name: analytic $a s within 5 % of flow $f s"
	else
		bad "$name: analytic $a s, flow $f s: more than 5 % apart"
	fi
	if awk "BEGIN { exit !(($f - $o) / $f > 0.01) }"; then
		ok "$name: contended (each group alone on its links: $o s)"
	else
		bad "$name: not contended (sharing off: $o s, flow $f s)"
	fi
}

N=cluster.network.nics_per_node
case_ "DDP tp2 1 NIC, 2 GB buckets" parallel.tp=2 $N=1 parallel.ddp.bucket=2GB
case_ "DDP tp4 2 NICs, 2 GB buckets, no overlap" parallel.tp=4 $N=2 parallel.ddp.bucket=2GB \
	parallel.ddp.overlap=false
case_ "DDP tp4 1 NIC, no overlap" parallel.tp=4 $N=1 parallel.ddp.overlap=false
case_ "ZeRO-1 tp2 1 NIC" parallel.zero=1 parallel.tp=2 $N=1
case_ "ZeRO-1 tp4 2 NICs" parallel.zero=1 parallel.tp=4 $N=2
case_ "ZeRO-2 tp4 1 NIC" parallel.zero=2 parallel.tp=4 $N=1
case_ "ZeRO-3 tp1 1 NIC" parallel.zero=3 $N=1
case_ "ZeRO-3 tp2 2 NICs" parallel.zero=3 parallel.tp=2 $N=2
case_ "ZeRO-3 tp4 1 NIC" parallel.zero=3 parallel.tp=4 $N=1
case_ "FSDP tp4 2 NICs" parallel.fsdp.enabled=true parallel.tp=4 $N=2
case_ "HSDP tp1 1 NIC" parallel.fsdp.enabled=true parallel.fsdp.hsdp=true $N=1
finish
