#!/bin/sh
# test_outputs.sh - outputs never destroy inputs (docs/reliability.md): every
# subcommand's output that names one of its inputs (the same path, another
# spelling of it, a symbolic or a hard link, a database's -wal) is refused with exit 2 before
# anything is written, the input byte for byte as it was; a write that fails
# (a file-size limit, a missing folder) leaves the old output as it was and
# no temporary file; another program's SQLite file given as --db is refused
# untouched, while an empty file and an older clustersim database open; a
# run under `ulimit -f` ends with a message and exit 1, not SIGXFSZ, and
# leaves the database valid with its earlier runs intact; a database that
# cannot be written exits 1. Run by `make check` with CLUSTERSIM and SRCDIR
# set; prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
command -v sqlite3 >/dev/null 2>&1 || { bad "sqlite3 is not installed"; finish; exit 1; }
LESSON=$SRC/scenarios/ddp-lesson.yaml
BIG=$SRC/scenarios/llama3-70b-h100x512.yaml
A100=$SRC/scenarios/validation/nccl/a100-all_reduce_perf.txt
H200=$SRC/scenarios/calibration/h200
sum() { cat "$@" | md5sum | cut -d' ' -f1; }
# What a folder holds: names, sizes and contents.
tree() { (cd "$1" && ls -a && cat -- *) | md5sum | cut -d' ' -f1; }
state() { if [ -d "$1" ]; then tree "$1"; else sum "$1"; fi; }

# The inputs.
DB=$T/r.db SW=$T/s.db S=$T/s.yaml LOG=$T/log.txt G=$T/g
cp "$LESSON" "$S" && cp "$A100" "$LOG" && mkdir "$G" && cp "$H200"/*.csv "$G"/ ||
	bad "copying the inputs"
"$CS" run "$LESSON" --db "$DB" >/dev/null 2>&1 && "$CS" run "$LESSON" --fidelity analytic \
	--steps 2 --db "$DB" >/dev/null 2>&1 || bad "the two runs"
"$CS" sweep "$LESSON" --vary training.micro_batch=1,2 --db "$SW" -j 1 >/dev/null 2>&1 ||
	bad "the sweep"
ln -s r.db "$T/link.db" && ln "$DB" "$T/hard.db" || bad "the links"

# refused NAME FILE... -- ARGS: clustersim ARGS exits 2 saying the output is
# an input, and every FILE (a file or a folder) is as it was.
refused() {
	name=$1 files=
	shift
	while [ "$1" != -- ]; do files="$files $1"; shift; done
	shift
	before=$(for f in $files; do state "$f"; done)
	"$CS" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	after=$(for f in $files; do state "$f"; done)
	if [ $rc -ne 2 ]; then bad "$name: exit $rc, want 2 ($(head -c 300 "$T/err"))"
	elif ! grep -q "is the same file as the input" "$T/err"; then
		bad "$name: message: $(cat "$T/err")"
	elif [ "$before" != "$after" ]; then bad "$name: an input changed"
	else ok "$name: exit 2, inputs unchanged"; fi
}

refused "export --csv DB" "$DB" -- export "$DB" --csv "$DB"
refused "export --csv DB --table runs" "$DB" -- export "$DB" --csv "$DB" --table runs
refused "export --csv DB --table sweeps" "$SW" -- export "$SW" --csv "$SW" --table sweeps
refused "export --svg DB" "$DB" -- export "$DB" --svg "$DB"
refused "export --trace DB" "$DB" -- export "$DB" --trace "$DB"
refused "export --csv ./DB (another spelling)" "$DB" -- export "$DB" --csv "$T/./r.db"
refused "export --csv to a symbolic link to DB" "$DB" -- export "$DB" --csv "$T/link.db"
refused "export --csv to a hard link of DB" "$DB" -- export "$DB" --csv "$T/hard.db"
refused "export through a link, to DB" "$DB" -- export "$T/link.db" --svg "$DB"
refused "export --csv DB-wal (SQLite's file beside it)" "$DB" -- export "$DB" --csv "$DB-wal"
refused "plot --svg SWEEPDB" "$SW" -- plot "$SW" --x training.micro_batch --y mfu --svg "$SW"
refused "plot --steps --svg DB" "$DB" -- plot "$DB" --steps --svg "$DB"
refused "sweep --csv SCENARIO" "$S" -- sweep "$S" --vary training.micro_batch=1,2 -j 1 --csv "$S"
refused "sweep --db SCENARIO" "$S" -- sweep "$S" --vary training.micro_batch=1,2 -j 1 --db "$S"
refused "sweep --csv DB --db DB" "$SW" -- sweep "$LESSON" --vary training.micro_batch=1,2 -j 1 \
	--db "$SW" --csv "$SW"
refused "run --db SCENARIO" "$S" -- run "$S" --db "$S"
refused "calibrate nccl LOG -o LOG" "$LOG" -- calibrate nccl "$LOG" --base dgx-a100 -o "$LOG"
cp "$LOG" "$T/log2.txt"
refused "calibrate nccl LOG LOG2 -o LOG2" "$LOG" "$T/log2.txt" -- calibrate nccl "$LOG" \
	"$T/log2.txt" --base dgx-a100 -o "$T/log2.txt"
ln -s "$LOG" "$T/link.log"
refused "calibrate nccl LOG --output LINK" "$LOG" -- calibrate nccl "$LOG" --base dgx-a100 \
	--output "$T/link.log"
refused "calibrate gemm DIR/gemm.csv -o DIR" "$G" -- calibrate gemm "$G/gemm.csv" \
	--gpu H200-SXM-141GB -o "$G"
cp "$G/gemm.csv" "$G/mine.csv"
refused "calibrate gemm -o the folder its tables are copied from" "$G" -- calibrate gemm \
	"$G/mine.csv" --gpu H200-SXM-141GB -o "$G"
rm "$G/mine.csv"
printf '# page\n' >"$T/page.md"
refused "validate -o FILE --check FILE" "$T/page.md" -- validate -o "$T/page.md" \
	--check "$T/page.md"
mkdir "$T/v" && printf 'id\n' >"$T/v/cases.csv"
refused "validate -o DIR/cases.csv" "$T/v/cases.csv" -- validate --dir "$T/v" -o "$T/v/cases.csv"

# Two outputs of one command that are one new file: refused, nothing made.
"$CS" sweep "$LESSON" --vary training.micro_batch=1,2 -j 1 --db "$T/new.db" --csv "$T/new.db" \
	>/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 2 ] && [ ! -e "$T/new.db" ]; then ok "sweep --db NEW --csv NEW: exit 2, no file"
else bad "sweep --db NEW --csv NEW: exit $rc, $(ls "$T" | grep new)"; fi
"$CS" collective --op allreduce --ranks 8 -b 1MB -e 1MB --db "$T/c.db" --csv "$T/c.db" \
	>/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 2 ] && [ ! -e "$T/c.db" ]; then ok "collective --db NEW --csv NEW: exit 2, no file"
else bad "collective --db NEW --csv NEW: exit $rc"; fi

# ---- a write that fails keeps the old output ---------------------------------------
# limited NAME BLOCKS OUTPUT -- ARGS: clustersim ARGS under `ulimit -f
# BLOCKS` exits 1 saying why, OUTPUT (a file or a folder) as it was and no
# temporary file (.NAME.XXXXXX) beside it. Blocks are 512 bytes in sh (1024
# in some shells); 100 is more than the 32 KiB a database's -shm needs to
# be read and less than the 85 KB of the smallest output (the SVG).
noleft() { ls -a "$1" | grep -q '^\.[^.].*\.......$' && echo "a temporary file was left"; }
limited() {
	name=$1 blocks=$2 out=$3
	shift 4
	before=$(state "$out")
	sh -c "ulimit -f $blocks; exec \"\$0\" \"\$@\"" "$CS" "$@" >/dev/null 2>"$T/err"
	rc=$?
	dir=$out
	[ -d "$out" ] || dir=$(dirname "$out")
	if [ $rc -ne 1 ]; then bad "$name: exit $rc, want 1 ($(cat "$T/err"))"
	elif ! grep -q "File too large" "$T/err"; then bad "$name: message: $(cat "$T/err")"
	elif [ "$(state "$out")" != "$before" ]; then bad "$name: the old output changed"
	elif [ -n "$(noleft "$dir")" ]; then bad "$name: a temporary file was left"
	else ok "$name: exit 1, the old output kept"; fi
}
for opt in csv svg trace; do
	printf 'old\n' >"$T/out.$opt"
	limited "export --$opt past ulimit -f" 100 "$T/out.$opt" -- export "$DB" "--$opt" \
		"$T/out.$opt"
done
# The sweep's chart is smaller than a -shm: read it from a copy in rollback
# journal mode, which needs none.
cp "$SW" "$T/sj.db" && sqlite3 "$T/sj.db" "PRAGMA journal_mode = DELETE" >/dev/null
printf 'old\n' >"$T/p.svg"
limited "plot --svg past ulimit -f" 1 "$T/p.svg" -- plot "$T/sj.db" --x training.micro_batch \
	--y mfu --svg "$T/p.svg"
printf 'old\n' >"$T/s.csv"
limited "sweep --csv past ulimit -f" 1 "$T/s.csv" -- sweep "$LESSON" \
	--vary training.micro_batch=1,2,4,8 --vary parallel.zero=0,1,2,3 -j 1 --csv "$T/s.csv"
printf 'old\n' >"$T/fit.yaml"
limited "calibrate nccl -o past ulimit -f" 1 "$T/fit.yaml" -- calibrate nccl "$LOG" \
	--base dgx-a100 -o "$T/fit.yaml"
"$CS" calibrate gemm "$H200/gemm.csv" --gpu H200-SXM-141GB -o "$T/cal" >/dev/null 2>&1 &&
	printf 'mine\n' >"$T/cal/notes.txt" || bad "calibrate gemm -o"
limited "calibrate gemm -o past ulimit -f (the whole folder)" 4 "$T/cal" -- calibrate gemm \
	"$H200/gemm.csv" --gpu H200-SXM-141GB -o "$T/cal"
"$CS" export "$DB" --csv "$T/none/x.csv" >/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "option --csv: cannot write '$T/none/x.csv'" "$T/err"; then
	ok "export --csv into a missing folder: exit 2"
else bad "export --csv into a missing folder: exit $rc, $(cat "$T/err")"; fi
"$CS" export "$DB" --csv "$T" >/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "Is a directory" "$T/err"; then ok "export --csv to a folder: exit 2"
else bad "export --csv to a folder: exit $rc, $(cat "$T/err")"; fi
if "$CS" export "$DB" --csv /dev/null 2>"$T/err" && "$CS" export "$DB" --csv - >"$T/std.csv" &&
   head -1 "$T/std.csv" | grep -q '^run_id,rank'; then
	ok "export --csv /dev/null and -: written as they are"
else bad "export --csv /dev/null or -: $(cat "$T/err")"; fi
printf 'old\n' >"$T/e.csv"
chmod 640 "$T/e.csv"
"$CS" export "$DB" --csv "$T/e.csv" 2>"$T/err" && head -1 "$T/e.csv" | grep -q '^run_id' &&
	[ "$(stat -c %a "$T/e.csv")" = 640 ] && [ -z "$(noleft "$T")" ] &&
	ok "export --csv replaces the old file, keeping its mode" ||
	bad "export --csv over an old file: $(cat "$T/err") $(stat -c %a "$T/e.csv")"

# ---- another program's SQLite file -------------------------------------------------
foreign() {
	name=$1 make=$2
	shift 2
	rm -f "$T/f.db" "$T/f.db-wal" "$T/f.db-shm"
	sqlite3 "$T/f.db" "$make"
	before=$(sum "$T/f.db")
	"$CS" "$@" --db "$T/f.db" >/dev/null 2>"$T/err"
	rc=$?
	if [ $rc -ne 2 ]; then bad "$name: exit $rc, want 2 ($(cat "$T/err"))"
	elif ! grep -q "f.db: a SQLite database of another program" "$T/err"; then
		bad "$name: message: $(cat "$T/err")"
	elif [ "$(sum "$T/f.db")" != "$before" ] || [ -e "$T/f.db-wal" ]; then
		bad "$name: the file changed"
	else ok "$name: exit 2, the file untouched"; fi
}
foreign "run --db another program's database" "CREATE TABLE t (x); INSERT INTO t VALUES (1)" \
	run "$LESSON"
foreign "run --db with another application_id" "PRAGMA application_id = 42;
	PRAGMA user_version = 4; CREATE TABLE runs (x); CREATE TABLE ranks (y)" run "$LESSON"
foreign "sweep --db another program's database" "PRAGMA user_version = 7; CREATE TABLE t (x)" \
	sweep "$LESSON" --vary training.micro_batch=1,2 -j 1
foreign "collective --db another program's database" "CREATE TABLE t (x)" \
	collective --op allreduce --ranks 8 -b 1MB -e 1MB
: >"$T/empty.db"
if "$CS" run "$LESSON" --db "$T/empty.db" >/dev/null 2>"$T/err" &&
   [ "$(sqlite3 "$T/empty.db" 'PRAGMA application_id')" = 1129075533 ]; then
	ok "a zero-length --db is initialised, with clustersim's application_id"
else bad "a zero-length --db: $(cat "$T/err")"; fi
cp "$DB" "$T/older.db"
sqlite3 "$T/older.db" "PRAGMA application_id = 0"
if "$CS" run "$LESSON" --db "$T/older.db" >/dev/null 2>"$T/err" &&
   [ "$(sqlite3 "$T/older.db" 'PRAGMA application_id; SELECT count(*) FROM runs')" = "1129075533
3" ]; then ok "an older clustersim database (no application_id) opens and gets it"
else bad "an older clustersim database: $(cat "$T/err")"; fi

# ---- a file-size limit while a run writes ------------------------------------------
U=$T/u.db
"$CS" run "$LESSON" --db "$U" >/dev/null 2>&1 && "$CS" run "$LESSON" --fidelity analytic \
	--db "$U" >/dev/null 2>&1 || bad "the two runs before the limit"
earlier() {
	sqlite3 "$U" "SELECT id, status, sim_end_ps, events FROM runs WHERE id <= 2 ORDER BY id;
		      SELECT run_id, count(*), sum(end_ps) FROM ops WHERE run_id <= 2 GROUP BY run_id;
		      SELECT count(*) FROM memory WHERE run_id <= 2"
}
before=$(earlier)
blocks=$(( $(stat -c %s "$U") / 512 + 512 ))
sh -c "ulimit -f $blocks; exec \"\$0\" \"\$@\"" "$CS" run "$BIG" --db "$U" >/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "File too large" "$T/err"; then
	ok "a run past ulimit -f: exit 1, $(head -c 150 "$T/err")"
else bad "a run past ulimit -f: exit $rc (SIGXFSZ is 153), $(cat "$T/err")"; fi
if [ "$(sqlite3 "$U" 'PRAGMA integrity_check')" = ok ] && [ "$(earlier)" = "$before" ] &&
   [ "$(sqlite3 "$U" 'SELECT count(*) FROM runs WHERE id > 2 AND status = "complete"')" = 0 ]
then ok "after ulimit -f: integrity ok, the earlier runs intact, the run not complete"
else bad "after ulimit -f: $(sqlite3 "$U" 'PRAGMA integrity_check; SELECT id, status FROM runs')"
fi
"$CS" run "$LESSON" --db "$U" >/dev/null 2>"$T/err" &&
	[ "$(sqlite3 "$U" 'SELECT status FROM runs ORDER BY id DESC LIMIT 1')" = complete ] &&
	ok "the database takes a new run after the limit" || bad "a run after the limit: $(cat "$T/err")"
rm -f "$T/n.db"
sh -c "ulimit -f 1; exec \"\$0\" \"\$@\"" "$CS" run "$LESSON" --db "$T/n.db" >/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "option --db: .*File too large" "$T/err"; then
	ok "a new database that cannot be written: exit 1"
else bad "a new database past ulimit -f: exit $rc, $(cat "$T/err")"; fi

# ---- a read-only database is a failure (1), not bad input (2) -----------------------
cp "$DB" "$T/ro.db"
chmod 444 "$T/ro.db"
before=$(sum "$T/ro.db")
if [ "$(id -u)" -ne 0 ]; then
	"$CS" run "$LESSON" --db "$T/ro.db" >/dev/null 2>"$T/err"
	rc=$?
elif command -v setpriv >/dev/null 2>&1; then
	chmod 755 "$T"   # root ignores modes: run it as nobody
	setpriv --reuid=65534 --regid=65534 --clear-groups "$CS" run "$LESSON" --db "$T/ro.db" \
		>/dev/null 2>"$T/err"
	rc=$?
	chmod 700 "$T"
else
	rc=skip
fi
if [ "$rc" = skip ]; then ok "read-only database: not checked (root without setpriv)"
elif [ "$rc" -eq 1 ] && grep -q "option --db: .*readonly" "$T/err" &&
     [ "$(sum "$T/ro.db")" = "$before" ]; then ok "a read-only database: exit 1, unchanged"
else bad "a read-only database: exit $rc, $(cat "$T/err")"; fi

finish
