#!/bin/sh
# test_sweep.sh - clustersim sweep: the cartesian product on 2 workers, failed
# points kept with their reason, the same results as 1 worker, an
# interrupted sweep that resumes, and bad input. Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
SC="$SRC/scenarios/zero-fsdp-compare.yaml"
VARY="--vary parallel.zero=0,1,2,3 --vary training.micro_batch=1..8"

"$CS" sweep "$SC" $VARY -j 2 --db "$T/s.db" --json > "$T/j2.json" 2> "$T/err" &&
	ok "sweep on 2 workers" || bad "sweep -j 2: $(cat "$T/err")"
n=$(sqlite3 "$T/s.db" "SELECT count(*) FROM sweep_points WHERE status='ok'")
[ "$n" = 16 ] && ok "16 points stored" || bad "$n points stored"
n=$(sqlite3 "$T/s.db" "SELECT count(*) FROM sweep_values")
[ "$n" = 32 ] && ok "two varied values per point" || bad "$n sweep_values rows"
"$CS" sweep "$SC" $VARY -j 1 --json > "$T/j1.json"
strip() { sed -e 's/"wall_s":[^}]*//' -e 's/"sweep":[0-9]*/"sweep":X/' "$1"; }
[ "$(strip "$T/j1.json")" = "$(strip "$T/j2.json")" ] && ok "-j 1 and -j 2 agree" ||
	bad "-j 1 and -j 2 differ"
"$CS" sweep "$SC" $VARY -j 2 --db "$T/s.db" > "$T/out" 2> "$T/err"
grep -q "resuming sweep 1" "$T/err" && [ "$(grep -c ' ok$' "$T/out")" = 16 ] &&
	ok "rerun resumes and shows every point" || bad "rerun: $(cat "$T/err")"

# Invalid and out-of-memory points are kept with their reason.
"$CS" sweep "$SC" --vary parallel.tp=1,3 --vary model.preset=gpt3-1.3b,llama3-70b -j 2 \
	--db "$T/f.db" > "$T/f.out" 2>&1
grep -q "invalid: .*parallel.tp" "$T/f.out" && ok "an invalid layout is kept" ||
	bad "invalid point: $(cat "$T/f.out")"
grep -q "no_fit: out of memory" "$T/f.out" && ok "a layout that does not fit is kept" ||
	bad "no-fit point: $(cat "$T/f.out")"
n=$(sqlite3 "$T/f.db" "SELECT count(*) FROM sweep_points WHERE status <> 'ok' AND reason <> ''")
[ "$n" -ge 2 ] && ok "failed points stored with reasons ($n)" || bad "failed points: $n"

# Interrupt a sweep (SIGINT), then resume it to the end.
MX="$SRC/scenarios/mixtral-8x7b.yaml"
MV="--vary training.global_batch=16,32,64,128 --vary parallel.zero=0,1 --vary model.moe.skew=0,0.5"
"$CS" sweep "$MX" $MV -j 2 --db "$T/i.db" > /dev/null 2> "$T/ierr" &
pid=$!
sleep 0.4
kill -INT $pid
wait $pid
rc=$?
n=$(sqlite3 "$T/i.db" "SELECT count(*) FROM sweep_points")
if [ $rc = 130 ] && [ "$n" -lt 16 ]; then ok "interrupted after $n of 16 points (exit 130)"
elif [ $rc = 0 ]; then ok "the sweep finished before the interrupt (fast machine)"
else bad "interrupted sweep: exit $rc, $n points: $(cat "$T/ierr")"; fi
"$CS" sweep "$MX" $MV -j 2 --db "$T/i.db" > /dev/null 2> "$T/ierr" && ok "resumed to the end" ||
	bad "resume: $(cat "$T/ierr")"
n=$(sqlite3 "$T/i.db" "SELECT count(*) FROM sweep_points")
[ "$n" = 16 ] && ok "all 16 points stored after resuming" || bad "$n points after resuming"
"$CS" sweep "$MX" $MV -j 1 --json > "$T/m1.json"
"$CS" sweep "$MX" $MV -j 2 --db "$T/i.db" --json > "$T/m2.json" 2>/dev/null
[ "$(strip "$T/m1.json")" = "$(strip "$T/m2.json")" ] && ok "resumed results equal a fresh run" ||
	bad "resumed results differ"

# Bad input.
for args in "--vary parallel.tpp=1,2" "--vary parallel.tp" "--vary parallel.tp=3..9" "-j 0 --vary parallel.tp=1"; do
	"$CS" sweep "$SC" $args > /dev/null 2> "$T/e"; rc=$?
	[ $rc = 2 ] && ok "bad input '$args': $(head -c 80 "$T/e")" || bad "'$args': exit $rc"
done
"$CS" sweep "$T/none.yaml" --vary parallel.tp=1 > /dev/null 2>&1; [ $? = 2 ] &&
	ok "missing scenario: exit 2" || bad "missing scenario"

finish
