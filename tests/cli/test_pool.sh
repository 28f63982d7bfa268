#!/bin/sh
# test_pool.sh - the worker pool of sweep and plan (sim/pool.h) when
# workers die: a point whose worker aborts or is killed (the test hook
# CLUSTERSIM_TEST_CRASH, and a real kill -9 of a worker mid-sweep) is stored
# as failed with the signal, on one worker or two; the sweep ends, stores
# every other point and exits 1; a resume runs nothing again; a plan names
# the crashed simulation, still ranks the rest and exits 1. Then the exits
# of sweeps with no point ok, --set past 64, and sweep identity: the
# scenario's content (not its path), unambiguous signatures, and identical
# sweeps started together. Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
SC="$SRC/scenarios/zero-fsdp-compare.yaml"
VARY="--vary parallel.zero=0,1,2,3 --vary training.micro_batch=1..8"
status() { sqlite3 "$1" "SELECT status || '|' || coalesce(reason, '') FROM sweep_points WHERE point = $2"; }
count() { sqlite3 "$1" "SELECT count(*) FROM sweep_points WHERE $2"; }

# Wait for pid at most $2 tenths of a second; kill it and fail if it hangs.
wait_for() {
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt "$2" ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$1" 2>/dev/null; then kill -9 "$1"; wait "$1"; return 99; fi
	wait "$1"
}

# A point that aborts, and one killed as the OOM killer would, on two
# workers and on one: the sweep ends, the point is failed with its signal.
for case in "2 5 ABRT 6" "1 5 KILL 9" "2 0 KILL 9" "1 15 SEGV 11"; do
	set -- $case
	CLUSTERSIM_TEST_CRASH=$2:$3 "$CS" sweep "$SC" $VARY -j $1 --db "$T/c$1$2.db" \
		> "$T/out" 2> "$T/err" &
	wait_for $! 600
	rc=$?
	[ $rc = 1 ] && ok "-j $1, point $2 killed by SIG$3: the sweep ends, exit 1" ||
		bad "-j $1, point $2 SIG$3: exit $rc: $(cat "$T/err")"
	[ "$(status "$T/c$1$2.db" $2)" = "failed|its worker was killed by signal $4 (SIG$3)" ] &&
		ok "point $2 stored as failed with signal $4" ||
		bad "point $2: '$(status "$T/c$1$2.db" $2)'"
	[ "$(count "$T/c$1$2.db" "status = 'ok'")" = 15 ] && ok "the 15 other points are stored ok" ||
		bad "$(count "$T/c$1$2.db" "status = 'ok'") points ok"
	grep -q "1 of 16 points failed" "$T/err" && grep -q "failed: its worker was killed" "$T/out" &&
		ok "stderr counts the failed point, the table shows it" || bad "messages: $(cat "$T/err")"
done

# A resume runs nothing again: the hook now names a stored point, which
# would fail if it ran; the failed point stays failed (and the exit 1).
CLUSTERSIM_TEST_CRASH=3:KILL "$CS" sweep "$SC" $VARY -j 1 --db "$T/c15.db" > "$T/out" 2> "$T/err"
rc=$?
[ $rc = 1 ] && grep -q "resuming sweep 1" "$T/err" && [ "$(count "$T/c15.db" "status = 'ok'")" = 15 ] &&
	[ "$(count "$T/c15.db" "status = 'failed'")" = 1 ] &&
	ok "a resume runs no stored point again and still exits 1" ||
	bad "resume: exit $rc, $(count "$T/c15.db" "status = 'ok'") ok: $(cat "$T/err")"
strip() { sed -e 's/"wall_s":[^}]*//' -e 's/"sweep":[0-9]*/"sweep":X/' "$1"; }
# The points of a sweep's JSON one a line, point 5 left out.
others() { strip "$1" | sed 's/,{"point":/\n{"point":/g' | grep -v '^{"point":5,'; }
"$CS" sweep "$SC" $VARY -j 2 --json > "$T/clean.json" 2>/dev/null
CLUSTERSIM_TEST_CRASH=5 "$CS" sweep "$SC" $VARY -j 2 --json > "$T/crash.json" 2>/dev/null
[ "$(others "$T/clean.json")" = "$(others "$T/crash.json")" ] &&
	grep -q '{"point":5,"values":{[^}]*},"status":"failed","reason":"its worker was killed by signal 6' \
	"$T/crash.json" && ok "the other points' results are those of a sweep without a crash" ||
	bad "a crash changed other points: $(head -c 300 "$T/crash.json")"

# A real SIGKILL from outside, mid-sweep, of a worker that is running a
# point (about a second each): one in state R that has used a twentieth of
# a second of CPU (an idle worker sleeps in read, a new one has used none).
MX="$SRC/scenarios/mixtral-8x7b.yaml"
MV="--vary parallel.zero=0,1 --vary model.moe.skew=0,0.5 --set sim.steps=6"
"$CS" sweep "$MX" $MV -j 2 --db "$T/k.db" > "$T/out" 2> "$T/err" &
pid=$!
victim=
i=0
while [ -z "$victim" ] && [ $i -lt 400 ]; do
	for c in $(pgrep -P $pid); do
		# /proc/PID/stat: field 3 the state, 14 and 15 user and system ticks.
		busy=$(awk '$3 == "R" && $14 + $15 >= 5 { print "yes" }' "/proc/$c/stat" 2>/dev/null)
		[ "$busy" = yes ] && { victim=$c; break; }
	done
	[ -z "$victim" ] && sleep 0.05
	i=$((i + 1))
done
[ -n "$victim" ] || bad "no worker of the sweep was seen running a point"
kill -9 "$victim"
# Reaped within 5 s (at once, unless the machine is very busy), not left a
# zombie beside a sweep that waits.
i=0
while [ -n "$(ps -o stat= -p "$victim" 2>/dev/null)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
state=$(ps -o stat= -p "$victim" 2>/dev/null)
[ -z "$state" ] && ok "the killed worker was reaped" ||
	bad "the killed worker $victim is still there ($state) while the sweep runs"
wait_for $pid 3000
rc=$?
# The worker may have finished its point between the look and the kill:
# then it died idle, nothing was lost and the sweep exits 0 with 4 points
# ok (the CLUSTERSIM_TEST_CRASH cases above are the deterministic proof).
nfailed=$(count "$T/k.db" "status = 'failed' AND reason = 'its worker was killed by signal 9 (SIGKILL)'")
nok=$(count "$T/k.db" "status = 'ok'")
if [ $rc = 1 ] && [ "$nfailed" = 1 ] && [ "$nok" = 3 ]; then
	ok "kill -9 of a busy worker: the sweep ends, exit 1, its point failed with SIGKILL, the other 3 ok"
elif [ $rc = 0 ] && [ "$nfailed" = 0 ] && [ "$nok" = 4 ]; then
	ok "kill -9 of a worker that had just finished: the sweep ends, exit 0, all 4 points ok"
else bad "after kill -9: exit $rc: $(sqlite3 "$T/k.db" "SELECT point, status, reason FROM sweep_points") $(head -c 300 "$T/err")"; fi

# plan: a simulation whose worker aborts is named, the rest ranked, exit 1.
for j in 1 2; do
	CLUSTERSIM_TEST_CRASH=1 "$CS" plan "$SC" --gpus 16 --analytic 8 --top 2 -j $j --json \
		> "$T/p.json" 2> "$T/err"
	rc=$?
	[ $rc = 1 ] && grep -q "analytic simulation of .* failed: its worker was killed by signal 6 (SIGABRT)" "$T/err" &&
		grep -q "1 of [0-9]* simulations failed" "$T/err" && ok "plan -j $j: the crashed simulation named, exit 1" ||
		bad "plan -j $j: exit $rc: $(cat "$T/err")"
	[ "$(grep -o '"step_time_s":null,"failed":"its worker was killed by signal 6 (SIGABRT)"' "$T/p.json" | wc -l)" = 1 ] &&
		[ "$(grep -o '"flow_step_time_s"' "$T/p.json" | wc -l)" = 2 ] &&
		ok "plan -j $j: the others ranked, 2 in flow" || bad "plan -j $j JSON: $(head -c 300 "$T/p.json")"
done
"$CS" plan "$SC" --gpus 16 --analytic 8 --top 2 > /dev/null 2>&1 && ok "a plan without failures exits 0" ||
	bad "a clean plan exits non-zero"

# A sweep with no point ok exits 1 (its points are still stored).
"$CS" sweep "$SC" --vary parallel.tp=3,5 --db "$T/n.db" > "$T/out" 2> "$T/err"
rc=$?
[ $rc = 1 ] && grep -q "no point of 2 ran: 0 no_fit, 2 invalid" "$T/err" &&
	[ "$(count "$T/n.db" "status = 'invalid'")" = 2 ] && ok "no point ok: exit 1, points stored" ||
	bad "no point ok: exit $rc: $(cat "$T/err")"
"$CS" sweep "$SC" --vary parallel.tp=1,3 > /dev/null 2>&1 && ok "an invalid point beside an ok one: exit 0" ||
	bad "one invalid point made the sweep fail"

# Every --set applies, the 65th and later too.
sets=""
i=0
while [ $i -lt 70 ]; do sets="$sets --set sim.seed=$i"; i=$((i + 1)); done
"$CS" sweep "$SC" --vary parallel.zero=0 $sets --set parallel.tp=3 --json > "$T/out" 2> "$T/err"
grep -q '"values":{"parallel.zero":"0"},"status":"invalid","reason":".*parallel.tp' "$T/out" &&
	ok "the 71st --set applies" ||
	bad "--set past 64: $(head -c 300 "$T/out")"

# Sweep identity: the scenario's content, not its path.
cp "$SC" "$T/a.yaml"
V1="--vary parallel.zero=0,3"
"$CS" sweep "$T/a.yaml" $V1 --db "$T/id.db" --json > "$T/a1.json" 2>/dev/null
mkdir "$T/moved" && cp "$T/a.yaml" "$T/moved/a.yaml"
"$CS" sweep "$T/moved/a.yaml" $V1 --db "$T/id.db" > /dev/null 2> "$T/err"
grep -q "resuming sweep 1" "$T/err" && ok "the same content at another path resumes" ||
	bad "moved scenario: $(cat "$T/err")"
sed 's/^\( *global_batch:\).*/\1 512/' "$T/a.yaml" > "$T/b.yaml" && mv "$T/b.yaml" "$T/a.yaml"
cmp -s "$T/a.yaml" "$SC" && bad "the edit did not change the scenario"
"$CS" sweep "$T/a.yaml" $V1 --db "$T/id.db" --json > "$T/a2.json" 2> "$T/err"
! grep -q "resuming" "$T/err" && grep -q '"sweep":2' "$T/a2.json" &&
	[ "$(strip "$T/a1.json")" != "$(strip "$T/a2.json")" ] &&
	ok "an edited scenario is a new sweep with new results" || bad "edited scenario: $(cat "$T/err")"

# Two command lines that read alike are two sweeps.
"$CS" sweep "$SC" $V1 --set sim.seed=1 --set sim.steps=2 --db "$T/sig.db" > /dev/null 2>&1
"$CS" sweep "$SC" $V1 --set "sim.seed=1 --set sim.steps=2" --db "$T/sig.db" > /dev/null 2> "$T/err"
! grep -q "resuming" "$T/err" && [ "$(sqlite3 "$T/sig.db" "SELECT count(*) FROM sweeps")" = 2 ] &&
	ok "'--set a --set b' and '--set \"a --set b\"' are two sweeps" || bad "signatures collide"
"$CS" sweep "$SC" --vary parallel.zero=0,1 --vary training.micro_batch=2 --db "$T/sig2.db" >/dev/null 2>&1
"$CS" sweep "$SC" --vary "parallel.zero=0,1 --vary training.micro_batch=2" --db "$T/sig2.db" >/dev/null 2>"$T/err"
! grep -q "resuming" "$T/err" && ok "a --vary value holding ' --vary ' is its own sweep" ||
	bad "vary signatures collide"

# Two identical sweeps started together on a new database, 20 times: both
# finish, one sweep row, its 2 points.
A="--vary parallel.zero=0,1 --set sim.fidelity=analytic -j 1"
LESSON="$SRC/scenarios/ddp-lesson.yaml"
fails=0
for n in $(seq 20); do
	"$CS" sweep "$LESSON" $A --db "$T/r$n.db" > /dev/null 2> "$T/r1.err" &
	p1=$!
	"$CS" sweep "$LESSON" $A --db "$T/r$n.db" > /dev/null 2> "$T/r2.err" &
	p2=$!
	wait $p1; r1=$?
	wait $p2; r2=$?
	if [ $r1 != 0 ] || [ $r2 != 0 ] || [ "$(sqlite3 "$T/r$n.db" "SELECT count(*) FROM sweeps")" != 1 ] ||
		[ "$(count "$T/r$n.db" "status = 'ok'")" != 2 ]; then
		fails=$((fails + 1))
		echo "race $n: exits $r1 $r2: $(cat "$T/r1.err" "$T/r2.err")"
	fi
done
[ $fails = 0 ] && ok "20 times two identical sweeps at once: both finish, one sweep" ||
	bad "$fails of 20 races failed"

# A scenario that is not a regular file is refused (each point reads it).
"$CS" sweep /dev/null --vary parallel.zero=0 > /dev/null 2> "$T/err"
rc=$?
[ $rc = 2 ] && grep -q "not a regular file" "$T/err" && ok "a non-regular scenario: exit 2" ||
	bad "/dev/null: exit $rc: $(cat "$T/err")"

finish
