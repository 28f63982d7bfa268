#!/bin/sh
# test_reliability.sh - the promises of docs/reliability.md that need a
# real process: a run killed with SIGKILL while it writes leaves a valid
# database, every earlier run intact and the partial run marked 'running'
# (never 'complete'), and the database takes new runs; two sweeps writing
# into one database at once lose and corrupt nothing and store what each
# stores alone; the same scenario and seed give identical stored results
# across runs and across -j (MoE routing from sim.seed included). Run by `make check` with CLUSTERSIM and SRCDIR set; prints
# "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
command -v sqlite3 >/dev/null 2>&1 || { bad "sqlite3 is not installed"; finish; exit 1; }
LESSON=$SRC/scenarios/ddp-lesson.yaml
q() { sqlite3 "$1" "$2"; }

# ---- SIGKILL while a run writes ----------------------------------------------------
DB=$T/k.db
"$CS" run "$LESSON" --db "$DB" >/dev/null 2>&1 && "$CS" run "$LESSON" --fidelity analytic --db "$DB" \
	>/dev/null 2>&1 || bad "the two runs before the crash"
earlier() {
	q "$DB" "SELECT id, status, sim_end_ps, events FROM runs WHERE id <= 2 ORDER BY id;
		 SELECT run_id, count(*), sum(end_ps) FROM ops WHERE run_id <= 2 GROUP BY run_id;
		 SELECT count(*) FROM memory WHERE run_id <= 2"
}
before=$(earlier)
# 512 GPUs, every timeline, four steps: tens of seconds of writing; killed
# as soon as its first batch of rows is committed.
"$CS" run "$SRC/scenarios/llama3-70b-h100x512.yaml" --record all --set sim.steps=4 \
	--db "$DB" >/dev/null 2>&1 &
pid=$!
i=0
while [ $i -lt 3000 ]; do  # up to 300 s: valgrind (make check-valgrind) is slow
	n=$(q "$DB" "SELECT count(*) FROM timeline_blocks WHERE run_id = 3" 2>/dev/null)
	[ "${n:-0}" -gt 0 ] && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null
[ "${n:-0}" -gt 0 ] && ok "killed while writing (run 3 had $n blocks)" ||
	bad "run 3 was not caught writing (blocks: ${n:-none})"
[ "$(q "$DB" "PRAGMA integrity_check")" = ok ] && ok "database valid after SIGKILL" ||
	bad "integrity_check: $(q "$DB" "PRAGMA integrity_check" | head -3)"
[ "$(earlier)" = "$before" ] && ok "earlier runs intact" || bad "earlier runs changed"
s=$(q "$DB" "SELECT status FROM runs WHERE id = 3")
[ "$s" = running ] && ok "the killed run is marked incomplete ('running')" || bad "run 3 status '$s'"
"$CS" report "$DB" >"$T/rep" 2>&1 && grep -q "run 2" "$T/rep" &&
	ok "report shows the newest complete run" || bad "report after the crash: $(head -3 "$T/rep")"
"$CS" run "$LESSON" --fidelity analytic --db "$DB" >/dev/null 2>&1 &&
	[ "$(q "$DB" "SELECT status FROM runs WHERE id = 4")" = complete ] &&
	ok "the database takes a new run" || bad "a run after the crash"

# ---- two sweeps into one database at once ---------------------------------------------
A="--vary training.micro_batch=1,2,4 --vary parallel.zero=0,1,2"
Bv="--vary parallel.ddp.bucket=1MiB,25MiB,100MiB --vary parallel.zero=0,3"
"$CS" sweep "$LESSON" $A -j 2 --set sim.fidelity=analytic --db "$T/both.db" --json >"$T/a.json" 2>"$T/a.err" &
pa=$!
"$CS" sweep "$LESSON" $Bv -j 2 --set sim.fidelity=analytic --db "$T/both.db" --json >"$T/b.json" 2>"$T/b.err" &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
[ $ra = 0 ] && [ $rb = 0 ] && ok "two sweeps at once both finish" ||
	bad "concurrent sweeps: exit $ra, $rb: $(cat "$T/a.err" "$T/b.err" | head -5)"
[ "$(q "$T/both.db" "PRAGMA integrity_check")" = ok ] && ok "shared database valid" || bad "shared database corrupt"
n=$(q "$T/both.db" "SELECT count(*) FROM sweep_points WHERE status = 'ok'")
[ "$n" = 15 ] && ok "all 15 points stored (9 + 6)" || bad "points stored: $n"
"$CS" sweep "$LESSON" $A -j 1 --set sim.fidelity=analytic --json >"$T/a1.json" 2>/dev/null
"$CS" sweep "$LESSON" $Bv -j 1 --set sim.fidelity=analytic --json >"$T/b1.json" 2>/dev/null
strip() { sed -e 's/"wall_s":[^}]*//g' -e 's/"sweep":[0-9]*/"sweep":X/' "$1"; }
[ "$(strip "$T/a.json")" = "$(strip "$T/a1.json")" ] && [ "$(strip "$T/b.json")" = "$(strip "$T/b1.json")" ] &&
	ok "each sweep's results equal the same sweep alone on one worker" || bad "concurrent results differ"

# Two processes creating one new database at the same moment: both switch
# it to WAL, and the second used to get "database is locked" (about 1 in 15
# tries before store.c retried). 20 tries.
locked=0
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	rm -f "$T/race.db" "$T/race.db-wal" "$T/race.db-shm"
	"$CS" sweep "$LESSON" --vary parallel.zero=0,1 --set sim.fidelity=analytic -j 1 \
		--db "$T/race.db" >/dev/null 2>"$T/r1" &
	"$CS" sweep "$LESSON" --vary parallel.zero=2,3 --set sim.fidelity=analytic -j 1 \
		--db "$T/race.db" >/dev/null 2>"$T/r2"
	wait
	[ "$(q "$T/race.db" "SELECT count(*) FROM sweep_points")" = 4 ] || locked=$((locked + 1))
done
[ $locked = 0 ] && ok "20 races to create one database: no lock errors, every point stored" ||
	bad "$locked of 20 races lost points: $(cat "$T/r1" "$T/r2" | head -2)"

# ---- determinism: stored results across runs and -j --------------------------------------
MIX=$SRC/scenarios/mixtral-8x7b.yaml
for i in 1 2; do
	"$CS" run "$MIX" --fidelity analytic --db "$T/m$i.db" --json 2>/dev/null |
		sed 's/"wall_s":[^,}]*//' >"$T/m$i.json"
	q "$T/m$i.db" "SELECT rank, stream, kind, name, start_ps, end_ps, bytes, flops FROM ops ORDER BY id;
		SELECT rank, compute_ps, exposed_comm_ps, idle_ps, end_ps, peak_bytes FROM ranks ORDER BY rank;
		SELECT name, value FROM metrics ORDER BY name" >"$T/m$i.rows"
done
cmp -s "$T/m1.json" "$T/m2.json" && [ -s "$T/m1.json" ] && ok "MoE: same report twice (but wall_s)" ||
	bad "MoE reports differ"
cmp -s "$T/m1.rows" "$T/m2.rows" && [ -s "$T/m1.rows" ] && ok "MoE: same stored rows twice" ||
	bad "MoE stored rows differ"
for j in 1 2; do
	"$CS" sweep "$LESSON" $A -j $j --set sim.fidelity=analytic --db "$T/j$j.db" >/dev/null 2>&1
	q "$T/j$j.db" "SELECT point, status, reason, step_time_s, tokens_per_s, mfu, hfu, peak_bytes
		FROM sweep_points ORDER BY point" >"$T/j$j.rows"
done
cmp -s "$T/j1.rows" "$T/j2.rows" && [ -s "$T/j1.rows" ] && ok "sweep: same stored points with -j 1 and -j 2" ||
	bad "sweep points differ across -j"
finish
