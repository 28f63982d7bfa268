#!/bin/sh
# test_plan.sh - clustersim plan: a small model on 16 GPUs is planned as pure
# data parallelism, the winner re-run with `clustersim run` gives the planner's
# flow step time, a model that needs sharding gets a layout that fits, nothing
# fitting is an error, the JSON is deterministic, and bad input is refused.
# Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
SC="$SRC/scenarios/zero-fsdp-compare.yaml"
# The value of KEY in the first layout of a plan --json file.
first() { sed -e 's/.*"layouts":\[{//' -e 's/}.*//' "$1" | tr ',' '\n' |
	sed -n "s/^\"$2\":\"*\([^\"]*\)\"*$/\1/p"; }

# GPT-3 XL (1.3B) fits on one GPU: splitting the model only adds communication,
# so the best layout on 16 GPUs is pure data parallelism.
"$CS" plan "$SC" --gpus 16 --analytic 8 --top 2 -j 2 --json > "$T/a.json" 2> "$T/err" &&
	ok "plan 1.3B on 16 GPUs" || bad "plan: $(cat "$T/err")"
[ "$(first "$T/a.json" tp)$(first "$T/a.json" pp)$(first "$T/a.json" cp)" = 111 ] &&
	[ "$(first "$T/a.json" dp)" = 16 ] && ok "the winner is pure data parallelism" ||
	bad "winner: $(head -c 400 "$T/a.json")"
grep -q "swapped order" "$T/err" && ok "estimate against simulation reported on stderr" ||
	bad "stderr: $(cat "$T/err")"
# The best 8 estimates, and the best estimate of each family not among them.
n=$(grep -o '"sp":' "$T/a.json" | wc -l)
[ "$n" -ge 8 ] && [ "$n" -le 14 ] && ok "$n layouts simulated (8 and the families')" ||
	bad "$n layouts in the JSON"

# The winner, run on its own, takes the time the planner reported: one
# data-parallel replica for all (sim.symmetry dp) by default, every rank
# with --exact-flow.
want=$(first "$T/a.json" flow_step_time_s)
got=$("$CS" run "$SC" --set parallel.zero="$(first "$T/a.json" zero)" \
	--set training.micro_batch="$(first "$T/a.json" micro_batch)" \
	--set training.recompute="$(first "$T/a.json" recompute)" --set sim.symmetry=dp --json |
	sed -n 's/^{"step_time_s":\([0-9.e+-]*\),.*/\1/p')
[ -n "$want" ] && [ "$want" = "$got" ] &&
	ok "clustersim run --set sim.symmetry=dp reproduces the winner ($got s)" ||
	bad "run gives '$got' s, plan said '$want' s"
"$CS" plan "$SC" --gpus 16 --analytic 8 --top 1 -j 2 --exact-flow --json > "$T/x.json" 2>/dev/null
want=$(first "$T/x.json" flow_step_time_s)
got=$("$CS" run "$SC" --set parallel.zero="$(first "$T/x.json" zero)" \
	--set training.micro_batch="$(first "$T/x.json" micro_batch)" \
	--set training.recompute="$(first "$T/x.json" recompute)" --json |
	sed -n 's/^{"step_time_s":\([0-9.e+-]*\),.*/\1/p')
[ -n "$want" ] && [ "$want" = "$got" ] &&
	ok "with --exact-flow, clustersim run reproduces the winner ($got s)" ||
	bad "--exact-flow: run gives '$got' s, plan said '$want' s"

# Rows come in ascending order of step time (flow for the head).
sed -e 's/},{/\n/g' "$T/a.json" | sed -n 's/.*"step_time_s":\([0-9.e+-]*\).*/\1/p' |
	tail -n +3 | sort -c -g && ok "analytic tail in ascending order" || bad "order"

# Identical runs give identical JSON, apart from the wall-clock keys.
"$CS" plan "$SC" --gpus 16 --analytic 8 --top 2 --json > "$T/b.json" 2>/dev/null
strip() { sed -e 's/"screened_per_s":[0-9.e+-]*,"wall_s":[0-9.e+-]*//' "$1"; }
[ "$(strip "$T/a.json")" = "$(strip "$T/b.json")" ] && ok "deterministic JSON" ||
	bad "two runs differ"

# The simulations on one worker or two give the same answer.
"$CS" plan "$SC" --gpus 16 --analytic 8 --top 2 -j 1 --json > "$T/j1.json" 2>/dev/null
[ "$(strip "$T/a.json")" = "$(strip "$T/j1.json")" ] && ok "-j 1 and -j 2 agree" ||
	bad "-j 1 and -j 2 differ"

# Llama-3 8B (16 bytes of model state per parameter: 128 GB) does not fit on
# one 80 GB GPU unreplicated: the winner shards it and fits.
"$CS" plan "$SC" --gpus 8 --set model.preset=llama3-8b --analytic 4 --top 1 \
	--json > "$T/c.json" 2>/dev/null
z=$(first "$T/c.json" zero) tp=$(first "$T/c.json" tp) pk=$(first "$T/c.json" peak_bytes)
[ -n "$z" ] && { [ "$z" -ge 1 ] || [ "$tp" -gt 1 ]; } &&
	awk -v p="$pk" 'BEGIN { exit !(p > 0 && p < 80e9) }' &&
	ok "8B on 8 GPUs: zero$z tp$tp peaks at $pk bytes" || bad "8B: $(head -c 400 "$T/c.json")"
grep -q '"memory":0' "$T/c.json" && bad "no layout dropped for memory" ||
	ok "layouts dropped for memory are counted"

# Nothing fits: Llama-3 70B with Adam on 8 GPUs needs 140 GB each.
"$CS" plan "$SC" --gpus 8 --set model.preset=llama3-70b > "$T/out" 2>&1
rc=$?
[ $rc = 3 ] && grep -q "none of [0-9]* layouts fits: [0-9]* invalid, [0-9]* out of memory" \
	"$T/out" && ok "nothing fits: exit 3 with the counts" || bad "rc=$rc: $(cat "$T/out")"

# The table: a header, the rows, and why the winner beats the runner-up.
"$CS" plan "$SC" --gpus 16 --analytic 4 --top 2 > "$T/t.out" 2>/dev/null
grep -q "^1 *tp1 pp1" "$T/t.out" && grep -q " beats .* per step, flow fidelity" "$T/t.out" &&
	ok "table and explanation" || bad "table: $(cat "$T/t.out")"
"$CS" plan "$SC" --gpus 16 --analytic 4 --top 2 --objective mfu 2>/dev/null |
	grep -q "with an MFU of" && ok "--objective mfu compares MFU" || bad "--objective mfu"

# Steering: --fix holds a key in every layout, --exclude never lets one in.
"$CS" plan "$SC" --gpus 16 --analytic 12 --top 1 --fix zero=1 --fix zero=2 --exclude mb=4 \
	--json > "$T/f.json" 2> "$T/err" && ok "plan with --fix and --exclude" ||
	bad "--fix: $(cat "$T/err")"
rows() { sed -e 's/},{/\n/g' "$1"; }
n=$(rows "$T/f.json" | grep -c '"tp":')
held=$(rows "$T/f.json" | grep -c -e '"zero":1,' -e '"zero":2,')
mb4=$(rows "$T/f.json" | grep -c '"micro_batch":4,')
[ "$n" -ge 12 ] && [ "$held" = "$n" ] && [ "$mb4" = 0 ] &&
	ok "zero held at 1 or 2 and no micro-batch of 4 in $n rows" ||
	bad "$n rows, $held with zero 1 or 2, $mb4 with mb 4"
grep -q '"rules":[1-9]' "$T/f.json" && ok "layouts held out are counted" ||
	bad "no rules count: $(head -c 300 "$T/f.json")"
grep -q '"spearman_rho":[0-9.-]' "$T/f.json" && ok "Spearman's rho in the JSON" ||
	bad "no rho: $(head -c 300 "$T/f.json")"
"$CS" plan "$SC" --gpus 16 --analytic 6 --top 1 --show 4 > "$T/s.out" 2>/dev/null
[ "$(grep -c '^[0-9]  *tp' "$T/s.out")" = 4 ] && ok "--show 4 prints 4 rows of 6" ||
	bad "--show: $(cat "$T/s.out")"

# The schedule: ZB-H1 tried beside 1F1B where a layout can split its
# backwards; --fix schedule= holds it, the table names it, --db keeps it.
"$CS" plan "$SC" --gpus 16 --analytic 12 --top 1 --fix schedule=zb-h1 --json --db "$T/zb.db" \
	> "$T/z.json" 2> "$T/err" && ok "plan with --fix schedule=zb-h1" ||
	bad "--fix schedule: $(cat "$T/err")"
n=$(rows "$T/z.json" | grep -c '"tp":'); zb=$(rows "$T/z.json" | grep -c '"schedule":"zb-h1"')
pp1=$(rows "$T/z.json" | grep -c '"pp":1,')
[ "$n" -ge 1 ] && [ "$zb" = "$n" ] && [ "$pp1" = 0 ] &&
	ok "every one of $n rows a zb-h1 pipeline" || bad "$n rows, $zb zb-h1, $pp1 without a pipeline"
"$CS" report "$T/zb.db" --plan last 2> "$T/err" | grep -q "rc=[a-z]* zb-h1" &&
	ok "report --plan names the schedule" || bad "report --plan: $(cat "$T/err")"
# A file of schema version 6 (plan_layouts without a schedule) reads as it
# is, and gains the column when a plan is written into it.
cp "$T/zb.db" "$T/v6.db"
sqlite3 "$T/v6.db" "ALTER TABLE plan_layouts DROP COLUMN schedule; PRAGMA user_version = 6"
"$CS" report "$T/v6.db" --plan last > "$T/v6.out" 2> "$T/err" && ! grep -q "rc=[a-z]* zb-h1" "$T/v6.out" &&
	ok "a version 6 plan reads back (no schedule stored: 1F1B)" || bad "v6: $(cat "$T/err")"
"$CS" plan "$SC" --gpus 16 --analytic 4 --top 1 --db "$T/v6.db" > /dev/null 2> "$T/err" &&
	[ "$(sqlite3 "$T/v6.db" "SELECT user_version FROM pragma_user_version")" = 8 ] &&
	[ "$(sqlite3 "$T/v6.db" "SELECT count(*) FROM plan_layouts WHERE plan_id = 1 AND schedule IS NULL")" -ge 1 ] &&
	[ "$(sqlite3 "$T/v6.db" "SELECT count(*) FROM plan_layouts WHERE plan_id = 2 AND schedule IS NULL")" = 0 ] &&
	ok "version 6 -> 8: the column added, old rows NULL" || bad "v6 -> v8: $(cat "$T/err")"

# The scenario's DP overlap options apply where the ZeRO stage has them:
# they do not make the other stages' layouts invalid.
inv() { "$CS" plan "$SC" --gpus 16 --analytic 2 --top 0 "$@" 2>&1 | sed -n 's/.*(\([0-9]*\) invalid.*/\1/p'; }
[ "$(inv)" = "$(inv --set parallel.ddp.overlap_grad_reduce=true)" ] &&
	[ "$(inv)" = "$(inv --set parallel.ddp.overlap_param_gather=true)" ] &&
	ok "ddp overlap options leave the other stages valid" || bad "ddp overlap options: $(inv) invalid without"
# --compare: a layout without SP runs blocking TP whatever the scenario's
# tp_overlap (as the plan runs it).
"$CS" plan "$SC" --gpus 16 --analytic 4 --top 1 --set parallel.tp_overlap=true \
	--compare tp=2,sp=false > /dev/null 2> "$T/err" && ok "--compare sp=false with tp_overlap set" ||
	bad "--compare sp=false: $(cat "$T/err")"

# parallel.tp_overlap: the scenario's (blocking here) unless --fix or
# --exclude names it, then tried both ways wherever SP is; --set sets the
# scenario's; the table marks it (+sp+ov), --db keeps it.
"$CS" plan "$SC" --gpus 16 --analytic 40 --top 1 --json > "$T/dov.json" 2> "$T/err"
[ "$(rows "$T/dov.json" | grep -c '"tp_overlap":true')" = 0 ] &&
	[ "$(rows "$T/dov.json" | grep -c '"sp":true')" -ge 1 ] &&
	ok "by default the scenario's blocking TP" || bad "overlapped rows in a default plan"
"$CS" plan "$SC" --gpus 16 --analytic 8 --top 1 --set parallel.tp_overlap=true --json \
	> "$T/sov.json" 2> "$T/err" &&
	[ "$(rows "$T/sov.json" | grep -c '"sp":true.*"tp_overlap":false')" = 0 ] &&
	[ "$(rows "$T/sov.json" | grep -c '"sp":false.*"tp_overlap":true')" = 0 ] &&
	[ "$(rows "$T/sov.json" | grep -c '"tp_overlap":true')" -ge 1 ] &&
	ok "--set parallel.tp_overlap=true: every SP row overlapped" || bad "--set tp_overlap: $(cat "$T/err")"
"$CS" plan "$SC" --gpus 16 --analytic 40 --top 1 --fix tp_overlap=true --fix tp_overlap=false \
	2>/dev/null | grep -q "^blocking TP  *tp" && ok "both tried: the TP families in the table" ||
	bad "no blocking TP family"
"$CS" plan "$SC" --gpus 16 --analytic 6 --top 1 --fix tp_overlap=true --json --db "$T/ov.db" \
	> "$T/ov.json" 2> "$T/err" && ok "plan with --fix tp_overlap=true" ||
	bad "--fix tp_overlap: $(cat "$T/err")"
n=$(rows "$T/ov.json" | grep -c '"tp":'); ov=$(rows "$T/ov.json" | grep -c '"sp":true.*"tp_overlap":true')
[ "$n" -ge 1 ] && [ "$ov" = "$n" ] && [ "$(rows "$T/ov.json" | grep -c '"tp":1,')" = 0 ] &&
	ok "every one of $n rows overlaps TP" || bad "$n rows, $ov overlapped"
[ "$(sqlite3 "$T/ov.db" "SELECT count(*) FROM plan_layouts WHERE tp_overlap = 1")" = "$n" ] &&
	"$CS" report "$T/ov.db" --plan last 2>/dev/null | grep -q "+sp+ov" &&
	ok "--db keeps tp_overlap; report --plan shows it" || bad "tp_overlap in the database"
"$CS" plan "$SC" --gpus 16 --analytic 6 --top 1 --exclude tp_overlap=true --json \
	> "$T/nov.json" 2> "$T/err" && [ "$(rows "$T/nov.json" | grep -c '"tp_overlap":true')" = 0 ] &&
	ok "--exclude tp_overlap=true: none overlapped" || bad "--exclude tp_overlap: $(cat "$T/err")"
"$CS" plan "$SC" --gpus 16 --analytic 40 --top 1 --json > "$T/all.json" 2> "$T/err"
rows "$T/all.json" | grep -q '"schedule":"1f1b"' &&
	"$CS" plan "$SC" --gpus 16 --analytic 40 --top 1 2>/dev/null |
	grep -q "^zero-bubble pipeline  *tp.* zb-h1 " && ok "the zero-bubble family in the table" ||
	bad "no zero-bubble family: $(cat "$T/err")"

# Every layout the plan reports fits in its simulation with the reserve
# (peak + reserve <= capacity), a miss of the estimate replaced: Llama-3 70B
# on 64 H100, where many layouts are near the limit.
"$CS" plan "$SRC/scenarios/llama3-70b-tp8-pp8.yaml" --gpus 64 --analytic 24 --top 1 -j 2 \
	--json > "$T/fit.json" 2> "$T/fit.err" && ok "plan 70B on 64 GPUs" ||
	bad "70B: $(cat "$T/fit.err")"
rows "$T/fit.json" | awk '
	function v(k) { if (!match($0, "\"" k "\":[-0-9.e+]*")) return -1;
		return substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 }
	/"sp":/ { n++; if (v("peak_bytes") < 0 || v("reserve_bytes") <= 0 ||
		v("peak_bytes") + v("reserve_bytes") > v("capacity_bytes")) bad++ }
	END { exit !(n >= 24 && bad == 0) }' &&
	ok "every reported layout fits with its reserve" || bad "fit: $(head -c 600 "$T/fit.json")"
! grep -q '"failed"' "$T/fit.json" && ok "no reported layout failed" ||
	bad "a layout failed: $(grep -o '"failed":"[^"]*"' "$T/fit.json" | head -3)"

# --compare: the layout asked for is simulated beside the winner, and each
# layout's terms (compute, exposed communication by kind, bubble, idle) add
# up to its step time, so the differences add up to the difference.
"$CS" plan "$SC" --gpus 16 --analytic 4 --top 1 --compare tp=2,zero=1,mb=2 --json \
	> "$T/cmp.json" 2> "$T/err" && ok "plan --compare" || bad "--compare: $(cat "$T/err")"
at=$(sed -n 's/.*"compare":\([0-9]*\),.*/\1/p' "$T/cmp.json")
rows "$T/cmp.json" | sed -n "$((at + 1))p" | grep -q '"tp":2,"sp":false,"pp":1,.*"micro_batch":2,"zero":1,' &&
	ok "the compared layout is row $at" || bad "compare row $at: $(head -c 600 "$T/cmp.json")"
rows "$T/cmp.json" | awk '
	function v(k,  m) { if (!match($0, "\"" k "\":[-0-9.e+]*")) return "";
		return substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) }
	/"tp":/ { t = v("flow_step_time_s"); if (t == "") t = v("step_time_s");
		sum = v("compute_s") + v("exposed_comm_s") + v("bubble_s") + v("idle_s");
		by = v("tensor_parallel") + v("data_parallel") + v("pipeline") + \
			v("context_parallel") + v("host");
		n++; if (sum - t > 0.001 * t || t - sum > 0.001 * t) bad++;
		if (by - v("exposed_comm_s") > 1e-6 || v("exposed_comm_s") - by > 1e-6) bad++ }
	END { exit !(n > 0 && bad == 0) }' &&
	ok "every layout's terms add up to its step time within 0.1 %" ||
	bad "terms: $(head -c 800 "$T/cmp.json")"
"$CS" plan "$SC" --gpus 16 --analytic 4 --top 1 --compare tp=2,zero=1,mb=2 > "$T/cmp.out" 2>/dev/null
grep -q "^Your layout (--compare): tp2 pp1" "$T/cmp.out" && grep -q "^Why not another family" \
	"$T/cmp.out" && ok "the comparison and the families are explained" ||
	bad "compare text: $(cat "$T/cmp.out")"
"$CS" plan "$SC" --gpus 16 --analytic 4 --top 1 --exclude zero=3 --json > "$T/ex.json" 2>/dev/null
! grep -q '"zero":3' "$T/ex.json" && ok "--exclude zero=3: no ZeRO-3 layout, families included" ||
	bad "zero3 after --exclude"

# --db keeps the plan: report --plan prints its ranking again, row for row.
"$CS" plan "$SC" --gpus 16 --analytic 6 --top 1 --show 100 --compare tp=2 --db "$T/p.db" \
	> "$T/db.out" 2>/dev/null && ok "plan --db" || bad "plan --db exits $?"
"$CS" report "$T/p.db" --plan last > "$T/rep.out" 2> "$T/err" && ok "report --plan last" ||
	bad "report --plan: $(cat "$T/err")"
grep '^[0-9][0-9]*  *tp' "$T/db.out" > "$T/a.rows"
grep '^[0-9][0-9]*  *tp' "$T/rep.out" > "$T/b.rows"
[ -s "$T/a.rows" ] && cmp -s "$T/a.rows" "$T/b.rows" && ok "the stored ranking is the printed one" ||
	bad "rows differ: $(diff "$T/a.rows" "$T/b.rows" | head -5)"
[ "$(sqlite3 "$T/p.db" "SELECT count(*) FROM plan_layouts WHERE plan_id = 1")" = \
	"$(wc -l < "$T/a.rows")" ] &&
	[ "$(sqlite3 "$T/p.db" "SELECT count(*) FROM plan_layouts WHERE compared = 1")" = 1 ] &&
	ok "plan_layouts holds every simulated layout, the compared one marked" ||
	bad "plan_layouts: $(sqlite3 "$T/p.db" "SELECT place, tp, compared FROM plan_layouts")"
"$CS" plot "$T/p.db" --plan last --svg "$T/plan.svg" 2> "$T/err" &&
	grep -q "estimate" "$T/plan.svg" && grep -q "analytic simulation" "$T/plan.svg" &&
	{ ! command -v xmllint >/dev/null 2>&1 || xmllint --noout "$T/plan.svg"; } &&
	ok "plot --plan draws the estimate against the simulations" ||
	bad "plot --plan: $(cat "$T/err")"
"$CS" report "$T/p.db" --plan 9 > "$T/out" 2>&1
[ $? = 2 ] && grep -q "has no plan 9" "$T/out" && ok "report --plan of a missing plan: exit 2" ||
	bad "missing plan: $(cat "$T/out")"

# Bad input: each a clear error and exit 2.
check_bad() {
	want=$1; shift
	"$CS" plan "$@" > "$T/out" 2>&1
	rc=$?
	[ $rc = 2 ] && grep -q "$want" "$T/out" && ok "refused: $want" ||
		bad "rc=$rc for '$*': $(cat "$T/out")"
}
check_bad "option --set parallel.tp=2: the plan varies parallel.tp; to hold it, use --fix tp" \
	"$SC" --gpus 16 --set parallel.tp=2
check_bad "option --fix tp=3: no layout the plan enumerates has tp=3" "$SC" --gpus 16 --fix tp=3
check_bad "option --fix: unknown key 'tpp'" "$SC" --gpus 16 --fix tpp=2
check_bad "option --exclude: recompute: expected none, selective or full" "$SC" --gpus 16 \
	--exclude recompute=some
check_bad "option --fix: zero: expected 0 (DDP), 1, 2 or 3" "$SC" --gpus 16 --fix zero=4
check_bad "option --fix: expected KEY=VALUE" "$SC" --gpus 16 --fix tp
check_bad "option --fix: schedule: expected one of 1f1b, gpipe, interleaved, fthenb, zb-h1" \
	"$SC" --gpus 16 --fix schedule=zb
check_bad "option --compare: unknown key 'tq'" "$SC" --gpus 16 --compare tq=2
check_bad "option --compare: the layout cannot run" "$SC" --gpus 16 --compare tp=3
check_bad "expected a scenario and --gpus N" "$SC"
check_bad "not a whole number of nodes of 8 GPUs" "$SC" --gpus 12
check_bad "option --objective: expected step_time" "$SC" --gpus 16 --objective speed
check_bad "option -g/--gpus: expected a whole number" "$SC" --gpus 0
check_bad "nope.yaml" "$T/nope.yaml" --gpus 8

finish
