#!/bin/sh
# bench/overlap.sh - what overlap costs: GPT-3 175B on 1,024 A100
# (scenarios/gpt3-175b-a100x1024.yaml) in three layouts, in analytic
# fidelity, as the model's costs are added one by one:
#   units       ZeRO-3 gathered by layer (FSDP's units of one layer: ZeRO-3
#               as clustersim costed it before its modules), collectives
#               alone on their links (sim.analytic_sharing false);
#   +modules    ZeRO-3 by module (parallel.zero3.*, its DeepSpeed defaults);
#   +sharing    collectives share links (sim.analytic_sharing true);
#   +nccl       all-gathers and reduce-scatters by ring, as NCCL runs them at
#               8 GPUs a node (parallel.algorithms.allgather/reducescatter).
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
	for costs in units +modules +sharing +nccl; do
		case $layout in megatron) z="" ;; *)
			z="--set parallel.zero=3"
			[ "$costs" = units ] && z="--set parallel.fsdp.enabled=true" ;;
		esac
		case $costs in
		units | +modules) c="--set sim.analytic_sharing=false" ;;
		+sharing) c="" ;;
		+nccl) c="--set parallel.algorithms.allgather=ring --set parallel.algorithms.reducescatter=ring" ;;
		esac
		set -- $(run "$l $z $c")
		printf '%-34s %-9s %10.3f %7.3f\n' "$name" "$costs" "$1" "$2"
	done
done
