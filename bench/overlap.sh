#!/bin/sh
# bench/overlap.sh - what overlap costs: GPT-3 175B on 1,024 A100
# (scenarios/gpt3-175b-a100x1024.yaml) in three layouts, in analytic
# fidelity, as the model's costs are added one by one:
#   units       ZeRO-3 gathered by layer (FSDP's units of one layer: ZeRO-3
#               as clustersim costed it before its modules), collectives
#               alone on their links (sim.analytic_sharing false);
#   +modules    ZeRO-3 by module (parallel.zero3.*, its DeepSpeed defaults);
#   +sharing    collectives share links (sim.analytic_sharing true);
#   +nccl       auto chooses as NCCL can: all-gathers and reduce-scatters by
#               ring at 8 GPUs a node (parallel.algorithms.auto nccl);
#   +interf     compute and NVLink communication slowed by each other
#               (compute.interference auto: the h200 table's curves).
# The first four run with the later costs off (parallel.algorithms.auto
# fastest, compute.interference none); the last is every default.
# Prints step time and MFU for each. docs/parallelism.md shows the table.
#
#   bench/overlap.sh CLUSTERSIM [SCENARIO]
set -eu
cs=${1:?usage: bench/overlap.sh CLUSTERSIM [SCENARIO]}
sc=${2:-$(dirname "$0")/../scenarios/gpt3-175b-a100x1024.yaml}

run() {
	# shellcheck disable=SC2086
	"$cs" run "$sc" --json $1 | sed -n 's/.*"step_time_s":\([-0-9.e+]*\).*"mfu":\([-0-9.e+]*\).*/\1 \2/p'
}

printf '%-34s %-9s %10s %7s\n' layout costs step_s mfu
for layout in megatron zero3-tp4 zero3-tp2; do
	case $layout in
	megatron) l="" name="Megatron TP8 PP16 DP8" ;;
	zero3-tp4) l="--set parallel.tp=4 --set parallel.pp=1 --set parallel.dp=256"
		name="ZeRO-3 TP4 DP256" ;;
	zero3-tp2) l="--set parallel.tp=2 --set parallel.pp=1 --set parallel.dp=512"
		name="ZeRO-3 TP2 DP512" ;;
	esac
	for costs in units +modules +sharing +nccl +interf; do
		case $layout in megatron) z="" ;; *)
			z="--set parallel.zero=3"
			[ "$costs" = units ] && z="--set parallel.fsdp.enabled=true" ;;
		esac
		off="--set parallel.algorithms.auto=fastest --set compute.interference=none"
		case $costs in
		units | +modules) c="--set sim.analytic_sharing=false $off" ;;
		+sharing) c="$off" ;;
		+nccl) c="--set compute.interference=none" ;;
		+interf) c="" ;;
		esac
		set -- $(run "$l $z $c")
		printf '%-34s %-9s %10.3f %7.3f\n' "$name" "$costs" "$1" "$2"
	done
done
