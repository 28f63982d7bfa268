#!/bin/sh
# test_cp_moe.sh - the context- and expert-parallel scenarios run in flow
# fidelity: Llama-3-8B at 128K tokens with CP 8 (zig-zag against contiguous
# ring and Ulysses), Mixtral-8x7B with EP 8, the DeepSeek-V3-shaped MoE on
# 256 GPUs. Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
field() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
less() { awk "BEGIN { exit !($1 < $2) }"; }
run() {
	name=$1; shift
	if "$CS" run "$@" --json > "$T/$name.json" 2> "$T/$name.err"; then ok "$name runs"
	else bad "$name: exit $?: $(cat "$T/$name.err")"; fi
}

CP="$SRC/scenarios/llama3-8b-cp8-128k.yaml"
run zigzag "$CP"
run ring "$CP" --set parallel.cp_algo=ring
run ulysses "$CP" --set parallel.cp_algo=ulysses
less "$(field "$T/zigzag.json" step_time_s)" "$(field "$T/ring.json" step_time_s)" &&
	ok "zig-zag beats contiguous ring under the causal mask" ||
	bad "zig-zag $(field "$T/zigzag.json" step_time_s) s vs ring $(field "$T/ring.json" step_time_s) s"
"$CS" run "$CP" --set parallel.cp_algo=ulysses --set parallel.cp=8 --set model.kv_heads=4 \
	> /dev/null 2> "$T/e"
[ $? = 2 ] && grep -q "key/value heads" "$T/e" && ok "Ulysses beyond the K/V heads refused" ||
	bad "Ulysses with 4 K/V heads on 8 ranks: $(cat "$T/e")"

run mixtral "$SRC/scenarios/mixtral-8x7b.yaml"
awk "BEGIN { exit !($(field "$T/mixtral.json" imbalance) > 1) }" &&
	ok "Mixtral: skewed routing loads the busiest GPU ($(field "$T/mixtral.json" imbalance)x)" ||
	bad "Mixtral: no imbalance"
awk "BEGIN { exit !($(field "$T/mixtral.json" dropped) > 0) }" &&
	ok "Mixtral: capacity 1.25 drops tokens" || bad "Mixtral: nothing dropped"
run uniform "$SRC/scenarios/mixtral-8x7b.yaml" --set model.moe.skew=0
less "$(field "$T/uniform.json" step_time_s)" "$(field "$T/mixtral.json" step_time_s)" &&
	ok "uniform routing is faster than skewed" || bad "skew costs nothing"

run deepseek "$SRC/scenarios/deepseek-v3-h100x256.yaml"
grep -q '"gpus":256' "$T/deepseek.json" && ok "DeepSeek-V3-shaped on 256 GPUs" || bad "not 256 GPUs"
grep -q '"fits":true' "$T/deepseek.json" && ok "DeepSeek-V3-shaped fits" || bad "does not fit"

finish
