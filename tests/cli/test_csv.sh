#!/bin/sh
# test_csv.sh - every CSV clustersim writes parses with libcsv (strict) and
# holds exactly what the database holds: the timeline, each exportable table
# (runs carries the scenario as JSON: quotes, commas, newlines), a
# collective's results, and a sweep's points. csvcheck (tests/cli/csvcheck.c)
# does the reading. Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
CK=${CSVCHECK:?set CSVCHECK to the csvcheck binary}

# check NAME CSV SQL [RUN]: the CSV matches the query on $T/r.db.
check() {
	name=$1; shift
	if out=$("$CK" "$DB" "$@" 2>&1); then ok "$name: $out"; else bad "$name: $out"; fi
}

DB=$T/r.db
"$CS" run "$SRC/scenarios/zero-fsdp-compare.yaml" --set parallel.zero=3 --db "$DB" \
	> /dev/null 2>&1 || bad "run --db"
"$CS" export "$DB" --csv "$T/timeline.csv" && [ -s "$T/timeline.csv" ] &&
	ok "export --csv" || bad "export --csv"
check "the timeline" "$T/timeline.csv" \
	"SELECT * FROM ops WHERE run_id = ?1 ORDER BY rank, start_ps, id" 1
for t in ops ranks links runs memory metrics; do
	"$CS" export "$DB" --table "$t" --csv "$T/$t.csv" || bad "export --table $t"
done
check "--table ops" "$T/ops.csv" "SELECT * FROM ops WHERE run_id = 1 ORDER BY rank, start_ps, id"
check "--table ranks" "$T/ranks.csv" "SELECT * FROM ranks WHERE run_id = 1 ORDER BY rank"
check "--table links" "$T/links.csv" "SELECT * FROM links WHERE run_id = 1 ORDER BY link"
check "--table memory" "$T/memory.csv" \
	"SELECT * FROM memory WHERE run_id = 1 ORDER BY rank, t_ps, rowid"
check "--table metrics" "$T/metrics.csv" "SELECT * FROM metrics WHERE run_id = 1 ORDER BY name"
check "--table runs (JSON with quotes, commas and newlines)" "$T/runs.csv" \
	"SELECT * FROM runs WHERE id = 1"
grep -q '""' "$T/runs.csv" && ok "runs.csv has quoted quotes" || bad "runs.csv not quoted"

# A CSV that is not what the database holds is caught (the check can fail).
sed '2s/,[0-9][0-9]*,/,7,/' "$T/ranks.csv" > "$T/ranks-bad.csv"
"$CK" "$DB" "$T/ranks-bad.csv" "SELECT * FROM ranks WHERE run_id = 1 ORDER BY rank" \
	> /dev/null 2>&1 && bad "a changed value went unnoticed" || ok "a changed value is caught"
printf 'a,"b\n' > "$T/broken.csv"
"$CK" "$DB" "$T/broken.csv" "SELECT 1 AS a, 2 AS b" > /dev/null 2>&1 &&
	bad "an unterminated quote went unnoticed" || ok "an unterminated quote is caught"

# A collective's results.
DB=$T/c.db
"$CS" collective --op allreduce --algo ring --cluster ideal --ranks 8 -b 1MB -e 4MB \
	--db "$DB" > /dev/null 2>&1 || bad "collective --db"
"$CS" export "$DB" --table collective_results --csv "$T/cr.csv" || bad "export collective_results"
check "--table collective_results" "$T/cr.csv" \
	"SELECT * FROM collective_results WHERE run_id = 1 ORDER BY rowid"

# A sweep's points.
DB=$T/s.db
"$CS" sweep "$SRC/scenarios/zero-fsdp-compare.yaml" --vary parallel.zero=0,3 \
	--vary training.micro_batch=2,4 -j 2 --db "$DB" --csv "$T/sweep.csv" > /dev/null 2>&1 ||
	bad "sweep --csv"
for t in sweeps sweep_points sweep_values; do
	"$CS" export "$DB" --table "$t" --csv "$T/$t.csv" || bad "export --table $t"
done
check "--table sweeps" "$T/sweeps.csv" "SELECT * FROM sweeps ORDER BY id"
check "--table sweep_points" "$T/sweep_points.csv" \
	"SELECT * FROM sweep_points ORDER BY sweep_id, point"
check "--table sweep_values" "$T/sweep_values.csv" \
	"SELECT * FROM sweep_values ORDER BY sweep_id, point, key"
"$CS" export "$DB" --table sweep_points --run 1 --csv "$T/x.csv" > "$T/out" 2>&1
[ $? = 2 ] && grep -q "option --run: table sweep_points belongs to no run" "$T/out" &&
	ok "--run with a sweep table is refused" || bad "--run with sweep_points: $(cat "$T/out")"
"$CS" export "$DB" --table nope --csv "$T/x.csv" > "$T/out" 2>&1
[ $? = 2 ] && grep -q "unknown table 'nope': expected one of ops, .*sweep_values" "$T/out" &&
	ok "an unknown table is refused with the list" || bad "--table nope: $(cat "$T/out")"
out=$("$CK" --parse "$T/sweep.csv" 2>&1)
case $out in
"5 records of "*) ok "sweep CSV: a header and 4 points ($out)" ;;
*) bad "sweep CSV: $out" ;;
esac

finish
