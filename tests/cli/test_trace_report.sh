#!/bin/sh
# test_trace_report.sh - `clustersim export --trace` and `clustersim report`.
# The trace of ddp-lesson is valid JSON with one process per rank, one
# thread per (rank, stream) of the ops table and one event per op of
# non-zero length; --ranks and --from/--to restrict it; names are escaped;
# above 1,000,000 events it warns and still writes. `report` prints again
# what `run` printed: --json is byte for byte the object of `run --json`
# (no key differs: events and wall_s are stored in the runs row; wall_s is
# still stripped before comparing, as the one wall-clock figure), the text
# the same lines after the first (which names the run instead of the
# scenario file); a collective run prints its table. Bad input exits 2.
# Needs the sqlite3 shell (json functions, readfile), as tools/install-deps.sh
# installs it. Run by `make check` with CLUSTERSIM and SRCDIR set; prints
# "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"

if ! command -v sqlite3 >/dev/null 2>&1; then
	bad "sqlite3 is not installed: run tools/install-deps.sh (as root)"
	echo "$pass passed, $fail failed"
	exit 1
fi

# q DB SQL: one value from sqlite3.
q() { sqlite3 "$1" "$2" 2>&1; }

# same NAME GOT WANT: compare two values.
same() {
	if [ "$2" = "$3" ]; then ok "$1: $2"; else bad "$1: got '$2', want '$3'"; fi
}

# ev FILE WHERE: how many events of the trace FILE satisfy WHERE (over the
# columns ph, name, pid, tid, ts, dur of each event).
ev() {
	q :memory: "SELECT count(*) FROM (SELECT json_extract(value, '\$.ph') AS ph,
		json_extract(value, '\$.name') AS name, json_extract(value, '\$.pid') AS pid,
		json_extract(value, '\$.tid') AS tid, json_extract(value, '\$.ts') AS ts,
		json_extract(value, '\$.dur') AS dur
		FROM json_each(readfile('$1'), '\$.traceEvents')) WHERE $2"
}

# valid NAME FILE: the file is one well-formed JSON value.
valid() {
	v=$(q :memory: "SELECT json_valid(readfile('$2'))")
	[ "$v" = 1 ] && ok "$2 is valid JSON ($1)" || bad "$1: not valid JSON ($v)"
}

# expect_bad NAME PATTERN ARGS...: exit 2 and a message matching PATTERN.
expect_bad() {
	name=$1 pat=$2; shift 2
	"$CS" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 2 ]; then bad "$name: exit $rc, want 2"; return; fi
	if grep -q -- "$pat" "$T/err"; then ok "$name: exit 2, $(head -c 100 "$T/err")"
	else bad "$name: message '$(cat "$T/err")' lacks '$pat'"; fi
}

# ---- the runs -------------------------------------------------------------------------
DB=$T/ddp.db
"$CS" run "$SRC/scenarios/ddp-lesson.yaml" --db "$DB" >"$T/run1.txt" 2>"$T/err" &&
	ok "ddp-lesson run --db (text)" || bad "ddp-lesson run: $(cat "$T/err")"
"$CS" run "$SRC/scenarios/ddp-lesson.yaml" --db "$DB" --json >"$T/run2.json" 2>"$T/err" &&
	ok "ddp-lesson run --db --json" || bad "ddp-lesson run --json: $(cat "$T/err")"

# ---- the trace ------------------------------------------------------------------------
"$CS" export "$DB" --trace "$T/all.json" 2>"$T/err" && ok "export --trace" ||
	bad "export --trace: $(cat "$T/err")"
valid "whole run" "$T/all.json"
OPS="FROM ops WHERE run_id = 2 AND end_ps > start_ps"
same "one process per rank" "$(ev "$T/all.json" "ph = 'M' AND name = 'process_name'")" \
	"$(q "$DB" "SELECT count(DISTINCT rank) $OPS")"
same "one thread per (rank, stream)" "$(ev "$T/all.json" "ph = 'M' AND name = 'thread_name'")" \
	"$(q "$DB" "SELECT count(*) FROM (SELECT DISTINCT rank, stream $OPS)")"
same "one event per op" "$(ev "$T/all.json" "ph = 'X'")" "$(q "$DB" "SELECT count(*) $OPS")"
same "no zero-length event" "$(ev "$T/all.json" "ph = 'X' AND NOT dur > 0")" 0
same "events only on named threads" \
	"$(q :memory: "SELECT count(DISTINCT json_extract(value, '\$.pid') || '.' ||
		json_extract(value, '\$.tid')) FROM json_each(readfile('$T/all.json'), '\$.traceEvents')
		WHERE json_extract(value, '\$.ph') = 'X'")" \
	"$(ev "$T/all.json" "ph = 'M' AND name = 'thread_name'")"
grep -q '"name":"rank 3 (node 3, GPU 0)"' "$T/all.json" && ok "process named from the ranks table" ||
	bad "no process named 'rank 3 (node 3, GPU 0)'"
grep -q '"tid":1,"name":"thread_name","args":{"name":"grads"}' "$T/all.json" &&
	ok "stream 1 is the grads thread" || bad "no grads thread"
grep -q '"displayTimeUnit":"ms"' "$T/all.json" && ok "displayTimeUnit" || bad "no displayTimeUnit"
# Times in microseconds, exact: the total of dur is the ops' total in ps / 1e6.
got=$(q :memory: "SELECT printf('%.3f', sum(json_extract(value, '\$.dur')))
	FROM json_each(readfile('$T/all.json'), '\$.traceEvents') WHERE json_extract(value, '\$.ph') = 'X'")
same "durations in us" "$got" "$(q "$DB" "SELECT printf('%.3f', sum(end_ps - start_ps) / 1e6) $OPS")"
first=$(q "$DB" "SELECT printf('%d.%06d', start_ps / 1000000, start_ps % 1000000) $OPS AND rank = 0
	ORDER BY start_ps, id LIMIT 1 OFFSET 10")
grep -q "\"pid\":0,\"tid\":[0-9]*,\"ts\":$first," "$T/all.json" && ok "11th op of rank 0 at ts $first" ||
	bad "no event of rank 0 at ts $first"

# --ranks and a window; standard output.
"$CS" export "$DB" --trace "$T/r0.json" --ranks 0 2>"$T/err" && ok "export --trace --ranks 0" ||
	bad "export --ranks 0: $(cat "$T/err")"
valid "--ranks 0" "$T/r0.json"
same "--ranks 0: only pid 0" "$(ev "$T/r0.json" "pid <> 0")" 0
same "--ranks 0: its ops" "$(ev "$T/r0.json" "ph = 'X'")" "$(q "$DB" "SELECT count(*) $OPS AND rank = 0")"
"$CS" export "$DB" --trace - --ranks 1-2 --from 100ms --to 200ms >"$T/win.json" 2>"$T/err" &&
	ok "export --trace - with a window" || bad "export window: $(cat "$T/err")"
valid "window" "$T/win.json"
same "window: pids 1 and 2" "$(ev "$T/win.json" "pid NOT IN (1, 2)")" 0
same "window: ops overlapping 100-200 ms" "$(ev "$T/win.json" "ph = 'X'")" \
	"$(q "$DB" "SELECT count(*) $OPS AND rank IN (1, 2) AND end_ps > 100e9 AND start_ps < 200e9")"

# Names are escaped: quotes, backslashes, control characters, invalid UTF-8.
cp "$DB" "$T/esc.db"
# (ops is a view: an op is a definition, a timeline row and the block naming its rank)
q "$T/esc.db" "INSERT INTO op_defs (run_id, op, kind, name, bytes, flops)
	VALUES (2, 999999, 'send', 'q\"b\\' || char(1) || CAST(x'ff' AS TEXT) || 'é', NULL, 0);
	INSERT INTO timeline (stream, op, start_ps, end_ps) VALUES (12, 999999, 5, 9);
	INSERT INTO timeline_blocks (run_id, rank, first_row, last_row)
	VALUES (2, 0, last_insert_rowid(), last_insert_rowid())"
"$CS" export "$T/esc.db" --trace "$T/esc.json" --ranks 0 2>"$T/err" && ok "export odd names" ||
	bad "export odd names: $(cat "$T/err")"
valid "odd names" "$T/esc.json"
same "odd name read back" "$(q :memory: "SELECT json_extract(value, '\$.name') = 'q\"b\\' || char(1) ||
	char(65533) || 'é' FROM json_each(readfile('$T/esc.json'), '\$.traceEvents')
	WHERE json_extract(value, '\$.tid') = 12 AND json_extract(value, '\$.ph') = 'X'")" 1
grep -q '"tid":12,"name":"thread_name","args":{"name":"stream 12"}' "$T/esc.json" &&
	ok "unknown stream named 'stream 12'" || bad "stream 12 not named"

# Over 1,000,000 events: a warning naming the count and the options, still written.
cp "$DB" "$T/big.db"
q "$T/big.db" "INSERT INTO op_defs (run_id, op, kind, name, bytes, flops)
	VALUES (2, 999998, 'send', 'filler', 1, 0);
	WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999)
	INSERT INTO timeline (stream, op, start_ps, end_ps)
	SELECT 5, 999998, i * 400, i * 400 + 200 FROM n;
	INSERT INTO timeline_blocks (run_id, rank, first_row, last_row)
	VALUES (2, 0, last_insert_rowid() - 999999, last_insert_rowid())"
"$CS" export "$T/big.db" --trace "$T/big.json" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && [ -s "$T/big.json" ] && ok "a big trace is written" || bad "big trace: exit $rc"
grep -q 'warning: the trace has 1006[0-9]* events.*--ranks.*--from' "$T/err" &&
	ok "big trace warns: $(head -c 80 "$T/err")" || bad "no warning: '$(cat "$T/err")'"
rm -f "$T/big.json" "$T/big.db"

# ---- report ---------------------------------------------------------------------------
"$CS" report "$DB" --json >"$T/rep2.json" 2>"$T/err" && ok "report --json" ||
	bad "report --json: $(cat "$T/err")"
sed 's/,"wall_s":[-0-9.e+]*//' "$T/run2.json" >"$T/a"
sed 's/,"wall_s":[-0-9.e+]*//' "$T/rep2.json" >"$T/b"
if cmp -s "$T/a" "$T/b"; then ok "report --json equals run --json (wall_s aside)"
else bad "report --json differs: $(diff "$T/a" "$T/b" | head -c 600)"; fi
grep -q '"wall_s":[0-9]' "$T/rep2.json" && ok "report --json has wall_s" || bad "no wall_s"
"$CS" report "$DB" --run 1 >"$T/rep1.txt" 2>"$T/err" && ok "report --run 1" ||
	bad "report --run 1: $(cat "$T/err")"
tail -n +2 "$T/run1.txt" >"$T/a"
tail -n +2 "$T/rep1.txt" >"$T/b"
if cmp -s "$T/a" "$T/b"; then ok "report text equals run text (after the first line)"
else bad "report text differs: $(diff "$T/a" "$T/b" | head -c 600)"; fi
head -1 "$T/rep1.txt" | grep -q "^clustersim report: run 1 of .*ddp-lesson.yaml" &&
	ok "first line names the run and its command" || bad "first line: $(head -1 "$T/rep1.txt")"

# Pipeline, experts, offload and ZeRO lines, text and JSON.
# report_same NAME ARGS...: run with --db, then report; both forms equal.
report_same() {
	name=$1; shift
	rm -f "$T/s.db"
	"$CS" run "$@" --record none --db "$T/s.db" --json >"$T/a" 2>"$T/err" ||
		{ bad "$name: run: $(cat "$T/err")"; return; }
	"$CS" report "$T/s.db" --json >"$T/b" 2>"$T/err"
	cmp -s "$T/a" "$T/b" && ok "$name: report --json" || bad "$name: JSON differs: $(diff "$T/a" "$T/b")"
	"$CS" run "$@" --record none | tail -n +2 >"$T/a"
	"$CS" report "$T/s.db" | tail -n +2 >"$T/b"
	cmp -s "$T/a" "$T/b" && ok "$name: report text" || bad "$name: text differs: $(diff "$T/a" "$T/b")"
}
report_same "pipeline" "$SRC/scenarios/ddp-lesson.yaml" --set parallel.pp=2 --set parallel.dp=4 \
	--set training.micro_batch=2
grep -q '^  pipeline    bubble' "$T/b" && ok "pipeline line" || bad "no pipeline line"
report_same "experts" "$SRC/scenarios/mixtral-8x7b.yaml"
grep -q '^  experts     8 experts' "$T/b" && ok "experts line" || bad "no experts line"
report_same "offload" "$SRC/scenarios/zero-fsdp-compare.yaml" --set parallel.zero=2 \
	--set parallel.offload.enabled=true
grep -q '^  offload     ' "$T/b" && ok "offload line" || bad "no offload line"
report_same "fsdp" "$SRC/scenarios/zero-fsdp-compare.yaml" --set parallel.fsdp.enabled=true
grep -q '(fsdp)' "$T/b" && ok "fsdp strategy" || bad "no fsdp strategy"

# A collective run: its table, as the command printed it.
"$CS" collective --op allreduce --algo ring --cluster dgx-h100 --nodes 2 -b 1MB -e 4MB \
	--db "$T/coll.db" >"$T/coll.txt" 2>"$T/err" && ok "collective --db" || bad "collective: $(cat "$T/err")"
"$CS" report "$T/coll.db" >"$T/coll-rep.txt" 2>"$T/err" && ok "report of a collective run" ||
	bad "report collective: $(cat "$T/err")"
# Its ranks rows: every rank's time adds up to the run's end.
[ "$(q "$T/coll.db" "SELECT count(*), sum(compute_ps + exposed_comm_ps + idle_ps =
	(SELECT max(end_ps) FROM ranks)), sum(exposed_comm_ps > 0) FROM ranks")" = "16|16|16" ] &&
	ok "collective ranks rows" || bad "collective ranks: $(q "$T/coll.db" "SELECT * FROM ranks LIMIT 2")"
cmp -s "$T/coll.txt" "$T/coll-rep.txt" && ok "collective table reprinted" ||
	bad "collective table differs: $(diff "$T/coll.txt" "$T/coll-rep.txt")"
"$CS" report "$T/coll.db" --json | grep -q '^{"op":"allreduce","cluster":"dgx-h100","ranks":16,.*"rows":\[{"algo":"ring"' &&
	ok "collective report --json" || bad "collective report --json"
"$CS" export "$T/coll.db" --trace "$T/coll.json" 2>"$T/err" && ok "trace of a collective run" ||
	bad "collective trace: $(cat "$T/err")"
valid "collective" "$T/coll.json"

# ---- bad input ------------------------------------------------------------------------
expect_bad "--trace with --csv" "options --csv and --trace" export "$DB" --trace - --csv -
expect_bad "--trace with --svg" "options --svg and --trace" export "$DB" --trace - --svg -
expect_bad "--table with --trace" "option --table" export "$DB" --trace - --table ranks
expect_bad "--trace rank not in the run" "option --ranks: rank 8" export "$DB" --trace "$T/x.json" --ranks 8
[ -e "$T/x.json" ] && bad "a failed trace left its file" || ok "no file left by a failed trace"
expect_bad "--trace bad --ranks" "option --ranks" export "$DB" --trace - --ranks 2-1
expect_bad "--trace --from after the end" "option --from" export "$DB" --trace - --from 5s
expect_bad "--trace unwritable" "option --trace: cannot write" export "$DB" --trace "$T/no/x.json"
expect_bad "--trace unknown run" "option --run: no run 9" export "$DB" --trace - --run 9
expect_bad "export, no output" "--trace FILE is required" export "$DB"
expect_bad "report missing file" "cannot read database '$T/none.db'" report "$T/none.db"
echo "not a database" >"$T/text.db"
expect_bad "report not a database" "not a clustersim database" report "$T/text.db"
sqlite3 "$T/empty.db" "CREATE TABLE t (x)"
expect_bad "report of another SQLite file" "not a clustersim database" report "$T/empty.db"
expect_bad "report no such run" "option --run: no run 7" report "$DB" --run 7
expect_bad "report bad --run" "option -r/--run" report "$DB" --run x
cp "$DB" "$T/running.db"
q "$T/running.db" "UPDATE runs SET status = 'running' WHERE id = 2" >/dev/null
expect_bad "report of a running run" "run 2 is running" report "$T/running.db" --run 2
expect_bad "report without a database" "expected one database file" report
expect_bad "report unknown option" "unknown option '--csv'" report "$DB" --csv -

finish
