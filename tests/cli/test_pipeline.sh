#!/bin/sh
# test_pipeline.sh - the 3D-layout scenarios: the layout lesson (70B on 64
# H100, TP 8 x PP 8, then PP 4 with ZeRO-1) and Llama-3-70B on 256 H100 in
# flow fidelity; the bubble and the memory of the busiest stage.
# Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
field() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
positive() { awk "BEGIN { exit !($1 > 0) }"; }

run() {
	name=$1; shift
	if "$CS" run "$@" --json > "$T/$name.json" 2> "$T/$name.err"; then ok "$name runs"
	else bad "$name: exit $?: $(cat "$T/$name.err")"; fi
}

run tp8pp8 "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" --fidelity analytic
run pp4zero1 "$SRC/scenarios/llama3-70b-tp8-pp4-zero1.yaml" --fidelity analytic
run h100x256 "$SRC/scenarios/llama3-70b-h100x256.yaml"

for f in tp8pp8 pp4zero1 h100x256; do
	grep -q '"fits":true' "$T/$f.json" && ok "$f fits" || bad "$f does not fit"
	for k in weights grads optimizer activations logits buffers; do
		grep -q "\"$k\":" "$T/$f.json" || bad "$f: no memory.$k"
	done
	positive "$(field "$T/$f.json" bubble_s)" && ok "$f: a pipeline bubble" || bad "$f: no bubble"
	positive "$(field "$T/$f.json" pipeline_s)" && ok "$f: a pipeline phase" || bad "$f: no phase"
done
grep -q '"strategy":"zero1"' "$T/pp4zero1.json" && ok "PP 4 with ZeRO-1" || bad "not zero1"
# ZeRO-1 over 2 replicas halves the optimizer states of a stage twice as big.
opt8=$(field "$T/tp8pp8.json" optimizer); opt4=$(field "$T/pp4zero1.json" optimizer)
awk "BEGIN { r = $opt4 / $opt8; exit !(r > 0.9 && r < 1.1) }" &&
	ok "optimizer states: PP 8 alone ~ PP 4 with ZeRO-1 over 2 ($opt8 vs $opt4)" ||
	bad "optimizer states $opt8 vs $opt4"
# The analytic and flow fidelities agree on the 256-GPU step within 1 %.
"$CS" run "$SRC/scenarios/llama3-70b-h100x256.yaml" --fidelity analytic --json > "$T/an.json"
a=$(field "$T/an.json" step_time_s); f=$(field "$T/h100x256.json" step_time_s)
awk "BEGIN { d = ($a - $f) / $f; exit !(d < 0.01 && d > -0.01) }" &&
	ok "256 GPUs: analytic $a s, flow $f s" || bad "256 GPUs: analytic $a s, flow $f s"
# Bad layouts.
"$CS" run "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" --set parallel.schedule=interleaved \
	--set parallel.vpp=2 --set training.global_batch=60 > /dev/null 2> "$T/e"
[ $? = 2 ] && grep -q "multiple of parallel.pp" "$T/e" && ok "interleaved needs m % p = 0" ||
	bad "interleaved with m = 60: $(cat "$T/e")"
"$CS" run "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" --set parallel.pp=3 --set parallel.dp=auto \
	--set cluster.nodes=3 > /dev/null 2> "$T/e"
[ $? = 2 ] && grep -q "do not split" "$T/e" && ok "80 layers over 3 stages refused" ||
	bad "80 layers over 3 stages: $(cat "$T/e")"
"$CS" run "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" --set parallel.pp=3 --set parallel.dp=auto \
	--set cluster.nodes=3 --set parallel.first_stage_layers=26 --set parallel.last_stage_layers=26 \
	--fidelity analytic > /dev/null 2> "$T/e" && ok "uneven stages: 26 + 28 + 26 layers" ||
	bad "uneven stages: $(cat "$T/e")"
"$CS" run "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" --set parallel.zero=3 > /dev/null 2> "$T/e"
[ $? = 2 ] && grep -q "not with ZeRO-3" "$T/e" && ok "ZeRO-3 with a pipeline refused" ||
	bad "ZeRO-3 with PP: $(cat "$T/e")"

# ZB-H1: the weight passes in the drain shrink the bubble, at the same peak
# activations on the first stage; its Gantt has the weight passes' legend.
ZB="--set parallel.pp=4 --set parallel.dp=2 --set training.global_batch=16 --fidelity analytic"
"$CS" run "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" $ZB --json > "$T/f1.json" 2> "$T/e" &&
"$CS" run "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" $ZB --set parallel.schedule=zb-h1 \
	--json --db "$T/zb.db" > "$T/zb.json" 2> "$T/e" && ok "zb-h1 runs" || bad "zb-h1: $(cat "$T/e")"
b1=$(field "$T/f1.json" bubble_s); bz=$(field "$T/zb.json" bubble_s)
awk "BEGIN { exit !($bz < 0.75 * $b1) }" && ok "zb-h1 bubble $bz s against 1f1b $b1 s" ||
	bad "zb-h1 bubble $bz s against 1f1b $b1 s"
"$CS" export "$T/zb.db" --svg "$T/zb.svg" --ranks 0,24 2> "$T/e" &&
	grep -q "backward: weight gradients" "$T/zb.svg" && ok "zb-h1 Gantt shows the W passes" ||
	bad "zb-h1 Gantt: $(cat "$T/e")"
[ "$(sqlite3 "$T/zb.db" "SELECT count(*) FROM op_defs WHERE phase = 'wgt'")" -gt 0 ] &&
	ok "W kernels stored with phase wgt" || bad "no phase wgt in the store"
"$CS" run "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" $ZB --db "$T/f1.db" > /dev/null 2>&1 &&
	"$CS" export "$T/f1.db" --svg "$T/f1.svg" --ranks 0 2> "$T/e" &&
	! grep -q "weight gradients" "$T/f1.svg" && ok "1f1b Gantt without the W legend" ||
	bad "1f1b Gantt: $(cat "$T/e")"
"$CS" run "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" --set parallel.schedule=zb-h1 \
	--set training.global_batch=4 > /dev/null 2> "$T/e"
[ $? = 2 ] && grep -q "zb-h1 needs at least as many micro-batches" "$T/e" &&
	ok "zb-h1 with m < p refused" || bad "zb-h1 with 4 micro-batches: $(cat "$T/e")"
"$CS" run "$SRC/scenarios/mixtral-8x7b.yaml" --set parallel.schedule=zb-h1 > /dev/null 2> "$T/e"
[ $? = 2 ] && grep -q "not modelled for mixture-of-experts" "$T/e" &&
	ok "zb-h1 with MoE refused" || bad "zb-h1 with MoE: $(cat "$T/e")"
"$CS" run "$SRC/scenarios/zero-fsdp-compare.yaml" --set parallel.schedule=zb-h1 \
	--set parallel.zero=3 > /dev/null 2> "$T/e"
[ $? = 2 ] && grep -q "not modelled for ZeRO-3" "$T/e" &&
	ok "zb-h1 with ZeRO-3 refused" || bad "zb-h1 with ZeRO-3: $(cat "$T/e")"

finish
