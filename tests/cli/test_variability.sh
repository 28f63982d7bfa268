#!/bin/sh
# test_variability.sh - stragglers and jitter (scenario section
# variability, docs/variability.md), and failures at scale (section
# failures: Young/Daly goodput): the same seed gives the same steps and
# another seed other ones; one GPU 1.5x slower stretches every step of its
# data-parallel group by about 1.5x, and the report names it; a spread of
# GPU speeds costs more as the synchronous group grows (its slowest member
# sets the pace); --steps N reports ordered percentiles; bad values exit 2.
# Run by `make check` with CLUSTERSIM and SRCDIR set; prints "N passed, N
# failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
L=$SRC/scenarios/ddp-lesson.yaml
num() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
run() {
	name=$1; shift
	"$CS" run "$L" --fidelity analytic "$@" --json >"$T/$name.json" 2>"$T/$name.err" ||
		bad "run $name: $(cat "$T/$name.err")"
}

# Seeded reproducibility.
J="--set variability.jitter=lognormal --set variability.jitter_cv=0.1 --steps 12"
run a $J
run b $J
run c $J --set sim.seed=7
strip() { sed 's/"wall_s":[^,}]*//' "$@"; }
[ -s "$T/a.json" ] && [ "$(strip "$T/a.json")" = "$(strip "$T/b.json")" ] &&
	ok "same seed: the same steps" || bad "same seed differs"
[ "$(num "$T/a.json" step_time_p50_s)" != "$(num "$T/c.json" step_time_p50_s)" ] &&
	ok "another seed: other steps" || bad "seed 7 gives the same median"
p=$(num "$T/a.json" step_time_min_s) q=$(num "$T/a.json" step_time_p50_s)
r=$(num "$T/a.json" step_time_p90_s) s=$(num "$T/a.json" step_time_p99_s)
u=$(num "$T/a.json" step_time_max_s)
awk "BEGIN { exit !($p <= $q && $q <= $r && $r <= $s && $s <= $u && $p < $u) }" &&
	ok "percentiles ordered: $p <= $q <= $r <= $s <= $u" || bad "percentiles: $p $q $r $s $u"

# No variability: exactly the plain run.
run plain
run none --set variability.jitter=none --set variability.stragglers=0
[ "$(num "$T/plain.json" step_time_s)" = "$(num "$T/none.json" step_time_s)" ] &&
	ok "variability none changes nothing" || bad "variability none changed the step"

# One straggler stretches every step of its group.
run slow --set variability.stragglers=1 --set variability.straggler_slowdown=1.5 --steps 4
t0=$(num "$T/plain.json" step_time_s) t1=$(num "$T/slow.json" step_time_s)
awk "BEGIN { x = $t1 / $t0; exit !(x > 1.4 && x < 1.55) }" &&
	ok "one GPU 1.5x slower: step $t0 -> $t1 s" || bad "straggler: $t0 -> $t1"
[ "$(num "$T/slow.json" step_time_min_s)" = "$(num "$T/slow.json" step_time_max_s)" ] &&
	ok "every step stretched alike" || bad "straggler steps differ"
grep -q '"stragglers":\[[0-7]\]' "$T/slow.json" && ok "the report names the straggler" ||
	bad "stragglers: $(grep -o '"stragglers":[^]]*]' "$T/slow.json")"
"$CS" run "$L" --fidelity analytic --set variability.stragglers=1 >"$T/txt" 2>&1 &&
	grep -q "1 straggler 1.5x slower (rank [0-7]); seed 1" "$T/txt" && ok "text report line" ||
	bad "text: $(grep variability "$T/txt")"

# A spread of GPU speeds (cv 0.1) costs more as the group grows: 2, 8, 32
# and 128 replicas of the same work per GPU (the GPUs' draws come in rank
# order, so a larger group's slowest GPU is at least as slow; equal maxima
# differ by the communication only).
prev=0
for n in 2 8 32 128; do
	run g$n --set cluster.nodes=$n --set parallel.dp=$n --set training.global_batch=$((8 * n)) \
		--set variability.gpu=lognormal --set variability.gpu_cv=0.1
	run b$n --set cluster.nodes=$n --set parallel.dp=$n --set training.global_batch=$((8 * n))
	x=$(awk "BEGIN { print $(num "$T/g$n.json" step_time_s) / $(num "$T/b$n.json" step_time_s) }")
	awk "BEGIN { exit !($x >= $prev - 0.001) }" && ok "DP $n: step x $x of the uniform GPUs'" ||
		bad "DP $n: x $x below $prev"
	prev=$x
done
awk "BEGIN { exit !($prev > 1.1) }" && ok "128 replicas pay more than 10 %" || bad "128: only x $prev"

# `report` reprints the steps, the variability line and the JSON from the database.
"$CS" run "$L" --fidelity analytic --set variability.stragglers=2 --steps 3 --db "$T/v.db" >"$T/r1" 2>&1
"$CS" report "$T/v.db" >"$T/r2" 2>&1
[ "$(tail -n +2 "$T/r1")" = "$(tail -n +2 "$T/r2")" ] && grep -q "2 stragglers" "$T/r2" &&
	ok "report repeats the steps and variability lines" || bad "report text: $(diff "$T/r1" "$T/r2" | head -5)"
"$CS" run "$L" --fidelity analytic --set variability.stragglers=2 --steps 3 --json | strip >"$T/j1"
"$CS" report "$T/v.db" --json | strip >"$T/j2"
cmp -s "$T/j1" "$T/j2" && ok "report --json equals run --json" || bad "report JSON: $(diff "$T/j1" "$T/j2" | head -3)"

# Each step's time is stored (metrics step.N) and `plot --steps` draws the
# distributions of the lesson scenario with and without a straggler.
SL=$SRC/scenarios/straggler-lesson.yaml
"$CS" run "$SL" --db "$T/sl.db" >/dev/null 2>&1 &&
	"$CS" run "$SL" --set variability.stragglers=1 --set variability.straggler_slowdown=1.2 \
		--db "$T/sl.db" >/dev/null 2>&1 || bad "straggler-lesson runs"
[ "$(sqlite3 "$T/sl.db" "SELECT count(*) FROM metrics WHERE run_id = 2 AND name LIKE 'step.%'")" = 100 ] &&
	ok "100 step times stored" || bad "stored step times"
if "$CS" plot "$T/sl.db" --steps --svg "$T/steps.svg" 2>"$T/err" &&
   xmllint --noout "$T/steps.svg" 2>/dev/null && grep -q "run 1: jitter 0.05<" "$T/steps.svg" &&
   grep -q "run 2: jitter 0.05, 1 slow 1.2x<" "$T/steps.svg"; then
	ok "plot --steps: one line per run, labelled"
else bad "plot --steps: $(cat "$T/err")"; fi
"$CS" plot "$T/sl.db" --steps --run 1 --svg "$T/one.svg" 2>/dev/null &&
	! grep -q "run 2:" "$T/one.svg" && ok "plot --steps --run 1" || bad "--run 1"
"$CS" plot "$T/v.db" --steps --run 9 --svg "$T/x.svg" >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q "run 9 has 0 stored step times" "$T/err" && ok "--run without steps refused" ||
	bad "--run 9: $(cat "$T/err")"
"$CS" plot "$T/sl.db" --steps --x parallel.dp --svg "$T/x.svg" >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q "takes no --x" "$T/err" && ok "--steps with --x refused" || bad "--steps --x"

# Failures at scale: Young/Daly goodput of Llama-3-405B on 16,384 GPUs
# (closed forms; the step in the collapsed mode), stored and reprinted.
BIG=$SRC/scenarios/llama3-405b-h100x16384.yaml
F="--fidelity analytic --set sim.symmetry=dp --set failures.gpu_mtbf=50000h"
"$CS" run "$BIG" $F --json >"$T/f.json" 2>"$T/err" || bad "failures run: $(cat "$T/err")"
m=$(num "$T/f.json" job_mtbf_s) c=$(num "$T/f.json" checkpoint_s) gp=$(num "$T/f.json" goodput)
awk "BEGIN { exit !($m > 10986 && $m < 10987 && $c > 56 && $c < 58 && $gp > 0.8 && $gp < 0.9) }" &&
	ok "job MTBF $m s, checkpoint $c s, goodput $gp" || bad "failures: $m $c $gp"
"$CS" run "$BIG" $F --db "$T/f.db" >"$T/f1" 2>&1 && "$CS" report "$T/f.db" >"$T/f2" 2>&1 &&
	grep -q "failures    job MTBF 3.05 h over 16384 GPUs" "$T/f2" &&
	[ "$(grep "^  failures" "$T/f1")" = "$(grep "^  failures" "$T/f2")" ] &&
	ok "the failures line, run and report" || bad "failures line: $(grep failures "$T/f1" "$T/f2")"
"$CS" run "$BIG" --fidelity analytic --set sim.symmetry=dp --json >"$T/f0.json" 2>/dev/null
[ "$(num "$T/f0.json" goodput)" = 0 ] && ok "no MTBF, no goodput" || bad "goodput without MTBF"

# Bad input.
bad_case() {
	want=$1; shift
	"$CS" run "$L" --fidelity analytic "$@" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc = 2 ] && grep -q -- "$want" "$T/err" && ok "refused: $want" || bad "$*: exit $rc: $(cat "$T/err")"
}
bad_case "variability.stragglers: 9 stragglers, but the cluster has 8 GPUs" --set variability.stragglers=9
bad_case "variability.jitter_cv" --set variability.jitter_cv=0
bad_case "variability.straggler_slowdown" --set variability.straggler_slowdown=0.5
bad_case "variability.jitter" --set variability.jitter=normal
bad_case "sim.symmetry: dp needs" --set variability.gpu=gamma --set sim.symmetry=dp
bad_case "sim.steps: expected a whole number from 1" --steps 0
bad_case "failures.storage_bandwidth" --set failures.storage_bandwidth=fast
bad_case "failures.gpu_mtbf: unknown unit" --set failures.gpu_mtbf=3years
finish
