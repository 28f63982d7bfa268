#!/bin/sh
# test_plot.sh - `clustersim plot`: a stored sweep drawn as a line chart is
# well-formed XML (xmllint) that renders (rsvg-convert), with one line per
# series and the legend's labels; categorical x (preset names) and log x;
# points without a value marked, not drawn; a sweep that varies a key the
# chart does not show is refused; bad input exits 2 with a message naming
# the option. Run by `make check` with CLUSTERSIM and SRCDIR set; prints
# "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"

for tool in xmllint rsvg-convert sqlite3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		bad "$tool is not installed: run tools/install-deps.sh (as root)"
		echo "$pass passed, $fail failed"
		exit 1
	fi
done

# svg_ok NAME FILE: well-formed and renders to a non-empty PNG.
svg_ok() {
	if xmllint --noout "$2" 2>"$T/err"; then ok "$1: well-formed"
	else bad "$1: xmllint: $(head -c 300 "$T/err")"; fi
	rm -f "$T/x.png"
	if rsvg-convert -o "$T/x.png" "$2" 2>"$T/err" && [ -s "$T/x.png" ]; then ok "$1: renders"
	else bad "$1: rsvg-convert: $(head -c 300 "$T/err")"; fi
}

# plot_ok NAME ARGS...: the command succeeds.
plot_ok() {
	name=$1; shift
	if "$CS" plot "$@" >"$T/out" 2>"$T/err"; then ok "$name"
	else bad "$name: exit $?: $(cat "$T/err")"; fi
}

# expect_bad NAME PATTERN ARGS...: exit 2 and a message matching PATTERN.
expect_bad() {
	name=$1 pat=$2; shift 2
	"$CS" plot "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 2 ]; then bad "$name: exit $rc, want 2 ($(cat "$T/err"))"; return; fi
	if grep -q -- "$pat" "$T/err"; then ok "$name: exit 2, $(head -c 120 "$T/err")"
	else bad "$name: message '$(cat "$T/err")' lacks '$pat'"; fi
}

"$CS" sweep "$SRC/scenarios/zero-fsdp-compare.yaml" --vary parallel.zero=0,1,2,3 \
	--vary training.micro_batch=1..8 --db "$T/s.db" -j 2 >/dev/null 2>"$T/err" &&
	ok "sweep zero x micro_batch" || bad "sweep: $(cat "$T/err")"

# mfu against micro_batch, one line per ZeRO stage.
plot_ok "plot mfu by micro_batch per zero" "$T/s.db" --x training.micro_batch --y mfu \
	--series parallel.zero --svg "$T/mfu.svg"
svg_ok "mfu chart" "$T/mfu.svg"
n=$(grep -c '<path class="ln" d="M[^"]*L' "$T/mfu.svg")
[ "$n" = 4 ] && ok "4 lines for 4 series" || bad "$n lines, want 4"
for v in 0 1 2 3; do
	grep -q "class=\"lg\"[^>]*>$v</text>" "$T/mfu.svg" || { bad "legend lacks zero=$v"; break; }
done && ok "legend labels 0 1 2 3"
grep -q '>parallel.zero</text>' "$T/mfu.svg" && ok "legend title names the series key" ||
	bad "legend title"
grep -q '>MFU (fraction)</text>' "$T/mfu.svg" && ok "y title with its unit" || bad "y title"
grep -q '>training.micro_batch</text>' "$T/mfu.svg" && ok "linear x title (1..8 spans 8x)" ||
	bad "x title: $(grep -o 'class="axt"[^<]*' "$T/mfu.svg")"
grep -q 'Sweep 1: mfu' "$T/mfu.svg" && grep -q 'zero-fsdp-compare.yaml' "$T/mfu.svg" &&
	ok "title and command" || bad "title or command"
n=$(grep -c '<title>training.micro_batch=[0-9]*, parallel.zero=[0-3]\|<title>parallel.zero=[0-3], training.micro_batch=' "$T/mfu.svg")
[ "$n" = 16 ] && ok "16 markers with tooltips" || bad "$n marker tooltips, want 16"

# Without --series the other varied key is refused; --where picks one value.
expect_bad "other key varies" "series parallel.zero" "$T/s.db" --x training.micro_batch \
	--y mfu --svg "$T/m.svg"
[ -e "$T/m.svg" ] && bad "a refused plot left its file" || ok "no file left by a refused plot"
plot_ok "--where parallel.zero=3" "$T/s.db" --x training.micro_batch --y peak_bytes \
	--where parallel.zero=3 --svg "$T/one.svg"
svg_ok "one line" "$T/one.svg"
n=$(grep -c '<path class="ln" d="M[^"]*L' "$T/one.svg")
[ "$n" = 1 ] && ok "one line" || bad "$n lines, want 1"
grep -q '>peak memory[^<]*(GB)</text>' "$T/one.svg" && grep -q 'parallel.zero = 3' "$T/one.svg" &&
	ok "peak memory in GB, the fixed value noted" || bad "GB title or note"
plot_ok "to standard output" "$T/s.db" --x parallel.zero --y tokens_per_s \
	--series training.micro_batch --svg -
xmllint --noout "$T/out" 2>/dev/null && ok "stdout chart well-formed" || bad "stdout chart"

# Every metric the error message lists can be drawn.
"$CS" plot "$T/s.db" --x training.micro_batch --y nope --svg - >/dev/null 2>"$T/err"
ms=$(sed -n 's/.*expected one of: //p' "$T/err" | tr -d ,)
nm=0
for m in $ms; do
	"$CS" plot "$T/s.db" --x training.micro_batch --y "$m" --series parallel.zero --svg - \
		>"$T/m.svg" 2>"$T/err" && xmllint --noout "$T/m.svg" 2>/dev/null ||
		{ bad "metric $m: $(cat "$T/err")"; nm=-1; break; }
	nm=$((nm + 1))
done
[ "$nm" -ge 10 ] && ok "all $nm metrics draw" || bad "metrics drawn: $nm"

# Categorical x: preset names, with a layout that does not fit marked.
"$CS" sweep "$SRC/scenarios/zero-fsdp-compare.yaml" --vary model.preset=gpt3-1.3b,llama3-8b,llama3-70b \
	--vary parallel.zero=0,3 --db "$T/c.db" -j 2 >/dev/null 2>"$T/err" &&
	ok "sweep over model.preset" || bad "preset sweep: $(cat "$T/err")"
plot_ok "categorical x" "$T/c.db" --x model.preset --y step_time_s --series parallel.zero \
	--svg "$T/cat.svg"
svg_ok "categorical chart" "$T/cat.svg"
for p in gpt3-1.3b llama3-8b llama3-70b; do
	grep -q "class=\"x[tr]\"[^>]*>$p</text>" "$T/cat.svg" || { bad "no tick label $p"; break; }
done && ok "preset names as tick labels"
nf=$(sqlite3 "$T/c.db" "SELECT count(*) FROM sweep_points WHERE status <> 'ok'")
nc=$(grep -c '<path class="bad"[^>]*stroke="#[0-9A-F]*"><title>' "$T/cat.svg")
[ "$nc" = "$nf" ] && ok "$nf points without a value marked by crosses" ||
	bad "$nc crosses for $nf points without a value"
if [ "$nf" -gt 0 ]; then
	grep -q 'class="lg"[^>]*>no fit[^<]*</text>' "$T/cat.svg" && ok "legend explains the crosses" ||
		bad "no legend entry for the crosses"
fi

# Log x: sizes with units spanning 16x or more.
"$CS" sweep "$SRC/scenarios/ddp-lesson.yaml" --vary parallel.ddp.bucket=1MB,4MB,16MB,64MB \
	--db "$T/b.db" -j 2 >/dev/null 2>"$T/err" && ok "sweep over bucket sizes" ||
	bad "bucket sweep: $(cat "$T/err")"
plot_ok "log x" "$T/b.db" --x parallel.ddp.bucket --y exposed_comm_s --svg "$T/log.svg"
svg_ok "log chart" "$T/log.svg"
grep -q '(log scale)</text>' "$T/log.svg" && ok "log scale said in the x title" || bad "no log scale"
grep -q 'class="xt"[^>]*>16 MB</text>' "$T/log.svg" && ok "tick labels with units" ||
	bad "tick labels: $(grep -o 'class="xt"[^<]*<' "$T/log.svg" | head -3)"

# Bad input.
printf 'not a database\n' > "$T/text.db"
sqlite3 "$T/other.db" "CREATE TABLE t (x)"
expect_bad "no such sweep" "option --sweep: no sweep 9" "$T/s.db" --sweep 9 --x parallel.zero --y mfu --svg -
expect_bad "unknown x key" "option --x: 'parallel.tp' is not a varied key.*parallel.zero, training.micro_batch" \
	"$T/s.db" --x parallel.tp --y mfu --svg -
expect_bad "unknown metric" "option --y: unknown metric 'speed'.*step_time_s" "$T/s.db" \
	--x parallel.zero --y speed --svg -
expect_bad "unknown series" "option --series" "$T/s.db" --x parallel.zero --y mfu --series foo --svg -
expect_bad "series = x" "option --series" "$T/s.db" --x parallel.zero --y mfu --series parallel.zero --svg -
expect_bad "bad --where" "option --where: expected KEY=VALUE" "$T/s.db" --x parallel.zero --y mfu --where x --svg -
expect_bad "--where value absent" "option --where: parallel.zero is never '7'" "$T/s.db" \
	--x training.micro_batch --y mfu --where parallel.zero=7 --svg -
expect_bad "unwritable file" "option --svg: cannot write" "$T/s.db" --x training.micro_batch \
	--y mfu --series parallel.zero --svg "$T/no/such/dir.svg"
expect_bad "missing --svg" "option --svg is required" "$T/s.db" --x parallel.zero --y mfu
expect_bad "missing database" "cannot read database" "$T/none.db" --x parallel.zero --y mfu --svg -
expect_bad "text file" "not a clustersim database" "$T/text.db" --x parallel.zero --y mfu --svg -
expect_bad "other SQLite file" "not a clustersim database" "$T/other.db" --x parallel.zero --y mfu --svg -
"$CS" run "$SRC/scenarios/ddp-lesson.yaml" --db "$T/r.db" >/dev/null 2>&1
expect_bad "database without sweeps" "holds no sweep" "$T/r.db" --x parallel.zero --y mfu --svg -

# The interference curves of a calibration table (no database): seven
# lines (the values themselves are pinned by tests/unit/test_compute.c).
plot_ok "interference curves" --interference h200 --svg "$T/interf.svg"
svg_ok "interference chart" "$T/interf.svg"
n=$(grep -c 'class="ln"' "$T/interf.svg")
[ "$n" -ge 7 ] && ok "interference: $n lines" || bad "interference: $n lines, expected 7"
expect_bad "interference: unknown table" "option --interference: cannot open" --interference nosuch \
	--svg -
expect_bad "interference with a DB" "it takes no DB" "$T/s.db" --interference h200 --svg -
expect_bad "interference without --svg" "option --svg is required" --interference h200
finish
