#!/bin/sh
# test_mpi.sh - sweep and plan over MPI ranks (./configure --with-mpi).
# With a clustersim built with MPI: a 2-rank mpirun sweep (oversubscribed,
# as root where needed) stores exactly the points of the same sweep run
# with -j 2, a rerun resumes, a point whose process is killed is stored
# failed, a 3-rank plan prints the same JSON as -j 2,
# and other commands refuse to run under mpirun. With one built without
# MPI: `version` says so and sweep, plan and run refuse to run under a
# launcher (exit 2) rather than run the whole job in every rank. `make check` runs
# the second part; .ci/run's MPI stage runs the first with build-mpi's
# binary. Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
LESSON=$SRC/scenarios/ddp-lesson.yaml

if ! "$CS" version | grep -q "^MPI: built in"; then
	"$CS" version | grep -q "^MPI: not built (./configure --with-mpi)" &&
		ok "version says MPI is not built" || bad "version: $("$CS" version)"
	for cmd in "sweep $LESSON --vary parallel.zero=0,1" "plan $LESSON --gpus 8" "run $LESSON"; do
		# shellcheck disable=SC2086 # words
		OMPI_COMM_WORLD_SIZE=2 "$CS" $cmd >/dev/null 2>"$T/err"
		rc=$?
		[ $rc = 2 ] && grep -q "built without MPI support (./configure --with-mpi)" "$T/err" &&
			ok "${cmd%% *} refuses to run under a launcher" || bad "${cmd%% *}: exit $rc: $(cat "$T/err")"
	done
	finish
	exit $?
fi

command -v mpirun >/dev/null 2>&1 || { bad "mpirun is not installed (tools/install-deps.sh)"; finish; exit 1; }
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
"$CS" version | grep -q "^MPI: built in" && ok "version says MPI is built in"

V="--vary training.micro_batch=1,2,4 --vary parallel.zero=0,1,2 --set sim.fidelity=analytic"
rows() {
	sqlite3 "$1" "SELECT point, status, reason, step_time_s, tokens_per_s, mfu, hfu, peak_bytes
		FROM sweep_points ORDER BY point; SELECT key, value FROM sweep_values ORDER BY 1, 2"
}
"$CS" sweep "$LESSON" $V -j 2 --db "$T/j.db" >/dev/null 2>"$T/err" || bad "sweep -j 2: $(cat "$T/err")"
# shellcheck disable=SC2086 # words
$MPIRUN -n 2 "$CS" sweep "$LESSON" $V --db "$T/m.db" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] && ok "mpirun -n 2 sweep" || bad "mpirun sweep: exit $rc: $(tail -5 "$T/err")"
n=$(sqlite3 "$T/m.db" "SELECT count(*) FROM sweep_points WHERE status = 'ok'")
[ "$n" = 9 ] && [ "$(rows "$T/m.db")" = "$(rows "$T/j.db")" ] &&
	ok "the MPI sweep stored the same 9 points as -j 2" || bad "MPI points differ ($n stored)"
$MPIRUN -n 2 "$CS" sweep "$LESSON" $V --db "$T/m.db" >"$T/out" 2>"$T/err" &&
	grep -q "resuming sweep 1" "$T/err" && [ "$(rows "$T/m.db")" = "$(rows "$T/j.db")" ] &&
	ok "a rerun under mpirun resumes" || bad "MPI resume: $(tail -3 "$T/err")"

# A point whose process is killed (the test hook, sim/pool.h) is stored
# as failed with the signal, the others ok, exit non-zero: each rank runs
# its points in a forked child.
# shellcheck disable=SC2086 # words
CLUSTERSIM_TEST_CRASH=4:KILL $MPIRUN -x CLUSTERSIM_TEST_CRASH -n 3 "$CS" sweep "$LESSON" $V \
	--db "$T/c.db" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] && [ "$(sqlite3 "$T/c.db" "SELECT status || '|' || reason FROM sweep_points WHERE point = 4")" = \
	"failed|its worker was killed by signal 9 (SIGKILL)" ] &&
	[ "$(sqlite3 "$T/c.db" "SELECT count(*) FROM sweep_points WHERE status = 'ok'")" = 8 ] &&
	ok "a point killed under mpirun is stored failed with SIGKILL, the 8 others ok" ||
	bad "MPI crash: exit $rc: $(sqlite3 "$T/c.db" "SELECT point, status, reason FROM sweep_points") $(tail -3 "$T/err")"

P=$SRC/scenarios/llama3-8b-cp8-128k.yaml
strip() { sed -e 's/"screened_per_s":[0-9.e+-]*,"wall_s":[0-9.e+-]*//' "$1"; }
"$CS" plan "$P" --gpus 16 --analytic 12 --top 2 --json -j 2 >"$T/pj.json" 2>"$T/err" ||
	bad "plan -j 2: $(cat "$T/err")"
$MPIRUN -n 3 "$CS" plan "$P" --gpus 16 --analytic 12 --top 2 --json >"$T/pm.json" 2>"$T/err"
rc=$?
[ $rc = 0 ] && [ -s "$T/pm.json" ] && [ "$(strip "$T/pj.json")" = "$(strip "$T/pm.json")" ] &&
	ok "mpirun -n 3 plan prints what -j 2 does" || bad "MPI plan: exit $rc: $(tail -3 "$T/err")"

$MPIRUN -n 2 "$CS" run "$LESSON" >/dev/null 2>"$T/err"
[ $? != 0 ] && grep -q "only sweep and plan share their work" "$T/err" &&
	ok "run refuses to run under mpirun" || bad "run under mpirun: $(head -3 "$T/err")"
$MPIRUN -n 2 "$CS" sweep "$T/none.yaml" --vary parallel.zero=0,1 >/dev/null 2>"$T/err"
[ $? != 0 ] && [ "$(grep -c "none.yaml: cannot read" "$T/err")" = 1 ] &&
	ok "bad input under mpirun: one message, non-zero exit" || bad "bad input under mpirun: $(head -3 "$T/err")"
finish
