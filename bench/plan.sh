#!/bin/sh
# bench/plan.sh - whole plans with the default settings on one core (one
# worker, -j 1, pinned to CPU 0 with taskset where there is one): GPT-3 175B
# on 1,024 A100 (sequence 2048, global batch 1536) and Llama-3-70B on 512
# H100, the targets of docs/performance.md ("Planning"). Prints one row per
# case: the best wall time of RUNS plans (default 3), its target, the
# layouts screened, simulated (analytic and flow), Spearman's rho of the
# estimate against the simulation, and the winner.
#
#   bench/plan.sh CLUSTERSIM [RUNS]
set -eu
cs=${1:?usage: bench/plan.sh CLUSTERSIM [RUNS]}
runs=${2:-3}
src=$(dirname "$0")/..
pin=""
command -v taskset >/dev/null 2>&1 && pin="taskset -c 0"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# key KEY: a top-level number of the plan's JSON in $out.
key() { sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p" "$out" | head -1; }

printf '%-34s %8s %7s %9s %9s %5s %7s  %s\n' case wall_s target layouts analytic flow rho \
	winner
for c in "gpt3-175b-a100x1024.yaml 1024 60" "llama3-70b-h100x512.yaml 512 20"; do
	set -- $c
	best=""
	i=0
	while [ "$i" -lt "$runs" ]; do
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086
		$pin "$cs" plan "$src/scenarios/$1" --gpus "$2" -j 1 --json > "$out" 2>/dev/null
		t1=$(date +%s.%N)
		best=$(awk -v a="$t0" -v b="$t1" -v m="$best" \
			'BEGIN { w = b - a; print (m == "" || w < m) ? w : m }')
		i=$((i + 1))
	done
	n=$(grep -o '"sp":' "$out" | wc -l)
	nf=$(grep -o '"flow_step_time_s":' "$out" | wc -l)
	win=$(sed -e 's/.*"layouts":\[{//' -e 's/,"estimate_s".*//' "$out" | tr -d '"')
	printf '%-34s %8.2f %7s %9s %9s %5s %7s  %s\n' "$1 ($2 GPUs)" "$best" "$3" \
		"$(key candidates)" "$n" "$nf" "$(key spearman_rho)" "$win"
done
