#!/bin/sh
# test_badinput.sh - the bad-input catalogue (tests/badinput/cases*.txt):
# malformed YAML, wrong types, negative, zero and enormous numbers, unit
# errors, impossible layouts, unknown presets, preset files that are
# themselves invalid, empty files, binary garbage, more ranks than the
# maximum, bad options. Every case must exit with status 2 (not a crash),
# print a message with the expected text that names the file or option,
# create no database, and leave an existing database as it was. Run by
# `make check` with CLUSTERSIM and SRCDIR set; prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"

D=$SRC/tests/badinput
command -v sqlite3 >/dev/null 2>&1 || { bad "sqlite3 is not installed"; finish; exit 1; }

# A database with one good run, which no bad case may touch.
"$CS" run "$D/base.yaml" --set sim.fidelity=analytic --record none --db "$T/keep.db" \
	>/dev/null 2>"$T/err" || bad "the good run: $(cat "$T/err")"
before=$(sqlite3 "$T/keep.db" "select * from runs; select count(*) from ranks; select count(*) from timeline;")

n=0
while IFS='|' read -r file want args; do
	case $file in '#'*|'') continue ;; esac
	n=$((n + 1))
	rm -f "$T/new.db"
	# shellcheck disable=SC2086 # args are words
	"$CS" run "$D/$file" $args --db "$T/new.db" >"$T/out" 2>"$T/err"
	rc=$?
	name="$file${args:+ $args}"
	if [ "$rc" -ne 2 ]; then
		bad "$name: exit $rc, expected 2: $(head -c 300 "$T/err")"
	elif ! grep -qF -- "$want" "$T/err"; then
		bad "$name: message lacks '$want': $(head -c 300 "$T/err")"
	elif [ -z "$args" ] && ! grep -qF -- "$file" "$T/err"; then
		bad "$name: message does not name the file: $(head -c 300 "$T/err")"
	elif [ -e "$T/new.db" ]; then
		bad "$name: left a database behind"
	else
		ok "$name"
	fi
	"$CS" run "$D/$file" $args --db "$T/keep.db" >/dev/null 2>&1
	[ $? -eq 2 ] || bad "$name: exit $? with an existing database"
done <<EOF
$(cat "$D"/cases*.txt)
EOF

[ "$n" -ge 40 ] && ok "$n cases in the catalogue" || bad "only $n cases (at least 40)"
if [ "$(sqlite3 "$T/keep.db" "pragma integrity_check")" = ok ] &&
   [ "$(sqlite3 "$T/keep.db" "select * from runs; select count(*) from ranks; select count(*) from timeline;")" = "$before" ]; then
	ok "the existing database is intact after every case"
else bad "the existing database changed"; fi
finish
