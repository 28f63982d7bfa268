#!/bin/sh
# bench/keys.sh - how long reading a scenario of many keys takes: a valid
# scenario followed by N distinct keys of an unknown section (default
# 240,000), so that `clustersim run` reads and checks every key for a twin,
# then stops at the first unknown one (exit 2). Prints keys and wall seconds.
#
#   bench/keys.sh CLUSTERSIM [N]
#
# Reading was quadratic (each key compared with every earlier one): 240,000
# keys took 7 min 28 s (3 min 2 s of CPU) on the development machine; with
# the hash set of scenarios/yaml.c, well under a second.
set -eu
cs=${1:?usage: bench/keys.sh CLUSTERSIM [N]}
n=${2:-240000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
{
	printf 'cluster:\n  preset: dgx-h100\nmodel:\n  preset: gpt3-1.3b\n'
	printf 'training:\n  seq: 2048\n  global_batch: 8\nextra:\n'
	awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "  k%d: 1\n", i }'
} >"$tmp/keys.yaml"
t0=$(date +%s.%N)
rc=0
"$cs" run "$tmp/keys.yaml" >/dev/null 2>"$tmp/err" || rc=$?
t1=$(date +%s.%N)
[ "$rc" -eq 2 ] && grep -q "unknown key extra.k0" "$tmp/err" ||
	{ echo "keys.sh: expected exit 2 at extra.k0, got $rc: $(cat "$tmp/err")" >&2; exit 1; }
awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "keys %d  wall_s %.3f\n", n, b - a }'
