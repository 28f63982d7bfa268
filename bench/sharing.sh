#!/bin/sh
# bench/sharing.sh - analytic fidelity against flow where data-parallel
# groups share NICs: scenarios/zero-fsdp-compare.yaml (GPT-3 XL on two DGX
# H100) under each data-parallel strategy, tensor parallelism 1, 2 and 4,
# and 1, 2 or 8 NICs a node (8 GPUs). Prints one row per case: the step
# time in flow, in analytic with sim.analytic_sharing (the default) and
# without, and each analytic's error against flow.
#
#   bench/sharing.sh CLUSTERSIM [SCENARIO]
#
# tests/cli/test_sharing.sh checks the contended rows; docs/performance.md
# shows the table.
set -eu
cs=${1:?usage: bench/sharing.sh CLUSTERSIM [SCENARIO]}
sc=${2:-$(dirname "$0")/../scenarios/zero-fsdp-compare.yaml}

step() {
	# shellcheck disable=SC2086
	"$cs" run "$sc" --json $1 | sed -n 's/.*"step_time_s":\([-0-9.e+]*\).*/\1/p'
}

printf '%-14s %-3s %-4s %-6s %10s %10s %8s %10s %8s\n' strategy tp nics bucket flow_s \
	analytic_s err shared_off err_off
for strat in ddp ddp-no-overlap zero1 zero2 zero3 fsdp hsdp; do
	case $strat in
	ddp) s="" ;;
	ddp-no-overlap) s="--set parallel.ddp.overlap=false" ;;
	zero*) s="--set parallel.zero=${strat#zero}" ;;
	fsdp) s="--set parallel.fsdp.enabled=true" ;;
	hsdp) s="--set parallel.fsdp.enabled=true --set parallel.fsdp.hsdp=true" ;;
	esac
	for tp in 1 2 4; do
		[ "$strat" = hsdp ] && [ "$tp" != 1 ] && continue  # one replica a node
		for nics in 1 2 8; do
			for bucket in 25MiB 2GB; do
				case $strat in ddp*) ;; *) [ "$bucket" = 2GB ] && continue ;; esac
				a="$s --set parallel.tp=$tp --set cluster.network.nics_per_node=$nics"
				a="$a --set parallel.ddp.bucket=$bucket"
				f=$(step "--fidelity flow $a")
				an=$(step "--fidelity analytic $a")
				off=$(step "--fidelity analytic --set sim.analytic_sharing=false $a")
				awk -v st="$strat" -v tp="$tp" -v n="$nics" -v b="$bucket" -v f="$f" \
					-v a="$an" -v o="$off" 'BEGIN {
					printf "%-14s %-3s %-4s %-6s %10.6f %10.6f %+7.2f%% %10.6f %+7.2f%%\n",
					       st, tp, n, b, f, a, 100 * (a - f) / f, o, 100 * (o - f) / f }'
			done
		done
	done
done
