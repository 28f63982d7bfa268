#!/bin/sh
# test_tutorial.sh - docs/tutorial.md works as written: every command of its
# ```sh blocks runs, in order, in an empty folder (with scenarios/ linked to
# the source tree's), and exits 0; the files it promises are there (the
# database, well-formed SVGs, non-empty CSVs and trace); the plan's winner is
# the layout the tutorial names, and running it gives the plan's flow time.
# Prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
DOC="$SRC/docs/tutorial.md"

if ! command -v xmllint >/dev/null 2>&1; then
	bad "xmllint is not installed: run tools/install-deps.sh (as root)"
	echo "$pass passed, $fail failed"
	exit 1
fi

# Split the ```sh blocks into one file per command, $T/cmd.N (continuation
# lines, ending in a backslash, join the command). A line of a sh block that
# does not start a clustersim command is reported in $T/stray.
mkdir "$T/cmds"
awk -v dir="$T/cmds" -v stray="$T/stray" '
	/^```sh$/ { insh = 1; next }
	/^```/ { insh = 0; next }
	!insh || /^[ \t]*$/ { next }
	{
		if (!cont) {
			if ($0 !~ /^clustersim /) { print NR ": " $0 > stray; next }
			n++
			f = sprintf("%s/cmd.%02d", dir, n)
		}
		print > f
		cont = /\\$/
	}' "$DOC"
[ -s "$T/stray" ] && bad "sh lines that are not clustersim commands: $(cat "$T/stray")" ||
	ok "every sh line is a clustersim command"

# Six numbered steps or more ("## 3. ..."), each with a command of its own.
steps=$(grep -c '^## [0-9][0-9]*\. ' "$DOC")
ncmd=$(ls "$T/cmds" | wc -l)
[ "$steps" -ge 6 ] && [ "$ncmd" -ge "$steps" ] && ok "$ncmd commands for $steps steps" ||
	bad "$ncmd commands extracted for $steps steps"
empty=$(awk '/^## / { if (step != "" && !c) print step; step = ""; c = 0 }
	/^## [0-9]+\. / { step = $0 }
	/^```sh$/ { insh = 1; next } /^```/ { insh = 0 } insh && /^clustersim / { c++ }
	END { if (step != "" && !c) print step }' "$DOC")
[ -z "$empty" ] && ok "every step runs a command" || bad "steps without a command: $empty"

# Run them in order in $T/work, each with its output in $T/out.N.
mkdir "$T/work"
ln -s "$(cd "$SRC" && pwd)/scenarios" "$T/work/scenarios"
for f in "$T"/cmds/cmd.*; do
	[ -e "$f" ] || break
	n=${f##*.}
	sed '1s/^clustersim /"$CLUSTERSIM" /' "$f" > "$T/run.sh"
	if (cd "$T/work" && CLUSTERSIM="$CS" sh "$T/run.sh") > "$T/out.$n" 2> "$T/err.$n"; then
		ok "command $n: $(head -c 70 "$f")"
	else
		bad "command $n exits $?: $(cat "$f"): $(head -c 300 "$T/err.$n")"
	fi
done

# The files the tutorial promises.
W="$T/work"
[ -s "$W/tutorial.db" ] && ok "tutorial.db written" || bad "no tutorial.db"
for svg in gantt.svg gantt-zoom.svg sweep.svg memory.svg; do
	if [ -s "$W/$svg" ] && xmllint --noout "$W/$svg" 2> "$T/err"; then
		ok "$svg well-formed"
	else
		bad "$svg: $(head -c 300 "$T/err" 2>/dev/null)"
	fi
done
for csv in sweep.csv timeline.csv links.csv; do
	[ -s "$W/$csv" ] && [ "$(wc -l < "$W/$csv")" -ge 2 ] && ok "$csv has rows" ||
		bad "$csv missing or empty"
done
head -1 "$W/timeline.csv" 2>/dev/null | grep -q '^run_id,rank,stream,kind,name,start_ps' &&
	ok "timeline.csv has the ops columns" || bad "timeline.csv header"
head -c 1 "$W/trace.json" 2>/dev/null | grep -q '[[{]' && ok "trace.json written" ||
	bad "trace.json missing or not JSON"

# The plan's winner is the layout the tutorial names: the first row of the
# first text block after the plan command.
pn=$(grep -l '^clustersim plan ' "$T"/cmds/cmd.* 2>/dev/null | head -1)
pn=${pn##*.}
want=$(awk '/^clustersim plan /{ p = 1 } p && /^1  /{ print $2, $3, $4, $5, $6, $7, $8, $9, $10; exit }' "$DOC")
got=$(awk '/^1  /{ print $2, $3, $4, $5, $6, $7, $8, $9, $10; exit }' "$T/out.$pn" 2>/dev/null)
[ -n "$want" ] && [ "$want" = "$got" ] && ok "plan winner as in the tutorial: $got" ||
	bad "plan winner '$got', the tutorial says '$want'"

# The tutorial's run of the winner takes the plan's flow step time.
rn=
for f in "$T"/cmds/cmd.*; do
	grep -q '^clustersim run ' "$f" 2>/dev/null && grep -q -e '--db tutorial.db' "$f" &&
		rn=${f##*.} && break
done
flow=$(awk '/^1  /{ print $(NF - 4); exit }' "$T/out.$pn" 2>/dev/null)
step=$(sed -n 's/^ *step time *\([0-9.]*\) s .*/\1/p' "$T/out.$rn" 2>/dev/null)
[ -n "$step" ] && [ "$(printf '%.4f' "$step")" = "$flow" ] &&
	ok "the run of the winner takes the plan's $flow s" ||
	bad "run gives '$step' s, the plan's flow time is '$flow' s"

finish
