#!/bin/sh
# test_store_layer.sh - the store module (sim/store*.c) is the only code
# that talks to SQLite: no other source file includes <sqlite3.h> or calls
# an sqlite3_ function, so the schema and every query over it stay in one
# place (docs/schema.md). No exception is left (allowed is empty).
. "${SRCDIR:-.}/tests/cli/lib.sh"
allowed=""
cd "$SRC" || exit 2
n=0
for f in sim/*.[ch] topology/*.[ch] collectives/*.[ch] parallel/*.[ch] scenarios/*.[ch] \
	tools/*.[ch]; do
	[ -f "$f" ] || continue
	case $f in sim/store.c|sim/store_*.c) continue ;; esac
	case " $allowed " in *" $f "*) continue ;; esac
	n=$((n + 1))
	if grep -n '<sqlite3\.h>\|sqlite3_[a-z]' "$f" >"$T/hits"; then
		bad "$f uses SQLite outside the store module: $(head -3 "$T/hits" | tr '\n' ' ')"
	fi
done
[ "$n" -gt 50 ] && ok "$n source files checked" ||
	bad "only $n source files found under $SRC"
# The check itself: a file that calls SQLite is caught.
printf '#include <sqlite3.h>\nint f(sqlite3 *db) { return sqlite3_close(db); }\n' >"$T/x.c"
grep -q '<sqlite3\.h>\|sqlite3_[a-z]' "$T/x.c" && ok "the pattern catches a call" ||
	bad "the pattern misses a call"
finish
