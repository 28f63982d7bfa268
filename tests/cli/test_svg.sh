#!/bin/sh
# test_svg.sh - `clustersim export --svg`: Gantt charts of a training run and
# of a collective benchmark are well-formed XML (xmllint) that renders
# (rsvg-convert), carry the legend, boxes and time axis, and bad options exit
# 2 with a message naming the option. Run by `make check` with CLUSTERSIM and
# SRCDIR set; prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"

for tool in xmllint rsvg-convert; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		bad "$tool is not installed: run tools/install-deps.sh (as root)"
		echo "$pass passed, $fail failed"
		exit 1
	fi
done

# svg_ok NAME FILE UNIT: well-formed, renders to a non-empty PNG, has the
# legend, boxes (rects without y, unlike the legend's) and the time unit UNIT
# on its axis.
svg_ok() {
	name=$1 f=$2 unit=$3
	if xmllint --noout "$f" 2>"$T/err"; then ok "$name: well-formed"
	else bad "$name: xmllint: $(head -c 300 "$T/err")"; fi
	rm -f "$T/x.png"
	if rsvg-convert -o "$T/x.png" "$f" 2>"$T/err" && [ -s "$T/x.png" ]; then ok "$name: renders"
	else bad "$name: rsvg-convert: $(head -c 300 "$T/err")"; fi
	for label in forward backward recompute communication "optimizer / other compute" idle; do
		grep -q ">$label" "$f" || { bad "$name: legend lacks '$label'"; return; }
	done
	ok "$name: legend"
	n=$(grep -c '<rect class="[fbrmo][ s]*" x="[0-9.]*" width' "$f")
	[ "$n" -gt 0 ] && ok "$name: $n boxes" || bad "$name: no boxes"
	grep -q "class=\"tk\"[^>]*>[0-9.]* $unit<" "$f" && ok "$name: axis in $unit" ||
		bad "$name: no axis label in $unit"
}

# expect_bad NAME PATTERN ARGS...: exit 2 and a message matching PATTERN.
expect_bad() {
	name=$1 pat=$2; shift 2
	"$CS" export "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 2 ]; then bad "$name: exit $rc, want 2"; return; fi
	if grep -q -- "$pat" "$T/err"; then ok "$name: exit 2, $(head -c 100 "$T/err")"
	else bad "$name: message '$(cat "$T/err")' lacks '$pat'"; fi
}

"$CS" run "$SRC/scenarios/ddp-lesson.yaml" --db "$T/ddp.db" >/dev/null 2>"$T/err" &&
	ok "ddp-lesson run --db" || bad "ddp-lesson run: $(cat "$T/err")"
"$CS" collective --op allreduce --algo ring --cluster dgx-h100 --nodes 2 -b 1MB -e 4MB \
	--db "$T/coll.db" >/dev/null 2>"$T/err" && ok "collective --db" || bad "collective: $(cat "$T/err")"

# Whole runs, a subset of ranks, a window.
"$CS" export "$T/ddp.db" --svg "$T/all.svg" 2>"$T/err" && ok "export --svg" ||
	bad "export --svg: $(cat "$T/err")"
svg_ok "ddp-lesson" "$T/all.svg" ms
grep -q "ddp-lesson.yaml" "$T/all.svg" && ok "title has the command" || bad "no command in the title"
grep -q "Run 1:" "$T/all.svg" && ok "title has the run id" || bad "no run id in the title"
[ "$(grep -c '>rank [0-9]*<' "$T/all.svg")" = 8 ] && ok "8 rank labels" || bad "rank labels"
"$CS" export "$T/ddp.db" --svg "$T/r01.svg" --ranks 0-1 2>"$T/err" && ok "export --ranks 0-1" ||
	bad "export --ranks 0-1: $(cat "$T/err")"
svg_ok "--ranks 0-1" "$T/r01.svg" ms
labels=$(grep -o '>rank [0-9]*<' "$T/r01.svg" | tr -d '<>' | tr '\n' ,)
[ "$labels" = "rank 0,rank 1," ] && ok "only ranks 0 and 1" || bad "ranks drawn: $labels"
"$CS" export "$T/ddp.db" --svg - --ranks 3 --from 100ms --to 200ms >"$T/win.svg" 2>"$T/err" &&
	ok "export --from --to to stdout" || bad "export --from/--to: $(cat "$T/err")"
svg_ok "window 100-200 ms" "$T/win.svg" ms
grep -q '>100 ms<' "$T/win.svg" && grep -q '>200 ms<' "$T/win.svg" && ok "axis from 100 to 200 ms" ||
	bad "window axis"
"$CS" export "$T/coll.db" --svg "$T/coll.svg" 2>"$T/err" && ok "export of a collective run" ||
	bad "collective export: $(cat "$T/err")"
svg_ok "collective" "$T/coll.svg" "µs"

# Merging keeps a chart small: one forward and one backward box per rank.
n=$(grep -c '<rect class="f[ s]*" x="[0-9.]*" width' "$T/all.svg")
[ "$n" = 8 ] && ok "one forward box per rank ($n)" || bad "forward boxes: $n, want 8"

# Bad input: exit 2, the option named, no file left behind.
expect_bad "bad --ranks" "option --ranks" "$T/ddp.db" --svg "$T/b.svg" --ranks 0-x
expect_bad "backward --ranks" "option --ranks" "$T/ddp.db" --svg "$T/b.svg" --ranks 5-2
expect_bad "rank not in the run" "option --ranks: rank 8" "$T/ddp.db" --svg "$T/b.svg" --ranks 0,8
[ -e "$T/b.svg" ] && bad "a failed export left its file" || ok "no file left by a failed export"
expect_bad "--from without unit" "option --from" "$T/ddp.db" --svg - --from 10
expect_bad "--to before --from" "option --to" "$T/ddp.db" --svg - --from 20ms --to 10ms
expect_bad "--from after the end" "option --from" "$T/ddp.db" --svg - --from 10s
expect_bad "--svg with --csv" "\-\-csv and --svg" "$T/ddp.db" --svg - --csv -
expect_bad "--ranks with --csv" "option --ranks" "$T/ddp.db" --csv - --ranks 0
expect_bad "--table with --svg" "option --table" "$T/ddp.db" --svg - --table ranks
expect_bad "unknown run" "option --run" "$T/ddp.db" --svg - --run 7

# The CSV export is unchanged.
"$CS" export "$T/ddp.db" --csv - | head -1 | grep -q '^run_id,rank,stream,kind,name,start_ps' &&
	ok "export --csv still works" || bad "export --csv"

finish
