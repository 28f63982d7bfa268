#!/bin/sh
# test_jobs.sh - several jobs on one cluster (a scenario's jobs list,
# docs/jobs.md) through `clustersim run`: the shipped scenario's two jobs
# cross one leaf of a 2:1 fabric and slow each other, under separate leaves
# they do not; the same run twice gives the same figures; --db stores the
# run together (jobs, job_links, ranks, timeline) and `report` prints it
# again, text and JSON, as run did; `plot --steps` draws each job alone and
# shared; one-job commands refuse a jobs file; bad jobs exit 2 naming the
# line. Run by `make check` with CLUSTERSIM and SRCDIR set; prints "N
# passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
J=$SRC/scenarios/shared-fabric-jobs.yaml
strip() { sed 's/"wall_s":[^,}]*//' "$@"; }
# Each job's name and mean step times alone and shared, from run --json.
job_times() {
	sed 's/{"name":/\n/g' "$1" | sed -n 's/^"\([a-z]*\)".*"alone":{"steps":[0-9]*,"step_time_s":\([-0-9.e+]*\).*"shared":{"steps":[0-9]*,"step_time_s":\([-0-9.e+]*\).*/\1 \2 \3/p'
}
APART="--set jobs.0.first_node=0 --set jobs.1.first_node=2"

"$CS" run "$J" --steps 2 --json >"$T/shared.json" 2>"$T/err" || bad "run: $(cat "$T/err")"
"$CS" run "$J" --steps 2 --json >"$T/again.json" 2>"$T/err" || bad "run again: $(cat "$T/err")"
[ -s "$T/shared.json" ] && [ "$(strip "$T/shared.json")" = "$(strip "$T/again.json")" ] &&
	ok "the same scenario twice: the same figures" || bad "runs differ"
job_times "$T/shared.json" >"$T/t1"
awk '{ if ($3 <= $2 * 1.001) exit 1 }' "$T/t1" && ok "sharing leaf 1, both slower: $(tr '\n' ';' <"$T/t1")" ||
	bad "shared: $(cat "$T/t1")"
grep -q '"shared_links":\[{"link":"rail[0-7].leaf1.\(up\|down\)"' "$T/shared.json" &&
	ok "the shared links are leaf 1's" || bad "links: $(grep -o '"shared_links":.\{80\}' "$T/shared.json")"

"$CS" run "$J" --steps 2 $APART --json >"$T/apart.json" 2>"$T/err" || bad "apart: $(cat "$T/err")"
job_times "$T/apart.json" >"$T/t2"
awk '{ if ($2 != $3) exit 1 }' "$T/t2" && grep -q '"shared_links":\[\]' "$T/apart.json" &&
	ok "under separate leaves: no shared link, no slowdown" || bad "apart: $(cat "$T/t2")"

# Text: each job's line, the links.
"$CS" run "$J" --steps 2 >"$T/text" 2>&1 || bad "text run: $(cat "$T/text")"
grep -q "job llama   nodes 1-2 (ranks 8-23): llama3-8b" "$T/text" &&
	grep -q "job gpt     nodes 3-4 (ranks 24-39): gpt3-6.7b" "$T/text" &&
	grep -q "16 carry more than one job's traffic" "$T/text" &&
	ok "text report: jobs and links" || bad "text: $(cat "$T/text")"

# --db: the run together, and report prints it again.
"$CS" run "$J" --steps 2 --db "$T/j.db" >"$T/r1" 2>&1 || bad "db run: $(cat "$T/r1")"
"$CS" report "$T/j.db" >"$T/r2" 2>&1 || bad "report: $(cat "$T/r2")"
[ "$(tail -n +2 "$T/r1")" = "$(tail -n +2 "$T/r2")" ] && ok "report repeats the text" ||
	bad "report text: $(diff "$T/r1" "$T/r2" | head -5)"
"$CS" report "$T/j.db" --json | strip >"$T/j2"
strip "$T/shared.json" | sed 's/"events":[0-9]*//' >"$T/j1"
sed -i 's/"events":[0-9]*//' "$T/j2"
cmp -s "$T/j1" "$T/j2" && ok "report --json equals run --json" || bad "report JSON: $(diff "$T/j1" "$T/j2" | head -3)"
q() { sqlite3 "$T/j.db" "$1"; }
[ "$(q 'SELECT count(*) FROM jobs')" = 2 ] && [ "$(q 'SELECT count(DISTINCT link) FROM job_links')" = 16 ] &&
	[ "$(q 'SELECT count(*) FROM ranks')" = 48 ] &&
	[ "$(q 'SELECT count(*) FROM ranks WHERE tp IS NULL')" = 16 ] &&
	[ "$(q "SELECT count(DISTINCT rank) FROM ops")" = 32 ] &&
	[ "$(q 'SELECT user_version FROM pragma_user_version')" = 8 ] &&
	ok "stored: 2 jobs, 16 shared links, 48 ranks (16 idle), timelines of 32" ||
	bad "db: $(q 'SELECT count(*) FROM jobs') jobs, $(q 'SELECT count(*) FROM ops') ops"
"$CS" plot "$T/j.db" --steps --svg "$T/steps.svg" 2>"$T/err" &&
	[ "$(grep -c 'run 1 job [a-z]* \(alone\|shared\)' "$T/steps.svg")" -ge 4 ] &&
	ok "plot --steps draws each job alone and shared" || bad "plot: $(cat "$T/err")"

# Commands of one job refuse a jobs file; bad jobs name the line.
"$CS" plan "$J" --gpus 16 >"$T/out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "shared-fabric-jobs.yaml:[0-9]*: jobs: this command takes a scenario of one job" "$T/out" &&
	ok "plan refuses a jobs file" || bad "plan: rc $rc: $(cat "$T/out")"
"$CS" run "$J" --set jobs.1.first_node=2 >"$T/out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "jobs\[1\] (gpt): nodes 2 to 3 overlap jobs\[0\] (llama): 1 to 2" "$T/out" &&
	ok "overlapping jobs: exit 2" || bad "overlap: rc $rc: $(cat "$T/out")"
"$CS" run "$J" --fidelity analytic >"$T/out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "flow fidelity only" "$T/out" && ok "analytic refused" ||
	bad "analytic: rc $rc: $(cat "$T/out")"
"$CS" run "$J" --record sample --db "$T/s.db" >"$T/out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "sim.record: sample" "$T/out" && [ ! -s "$T/s.db" ] &&
	ok "record sample refused, nothing stored" || bad "sample: rc $rc: $(cat "$T/out")"
finish
