#!/bin/sh
# test_cli.sh - the clustersim command end to end: the acceptance commands of
# the foundation, bad input (exit 2, message naming the option, no database
# left behind), the database and its export, help and docs/cli.md in sync.
# Run by `make check` with CLUSTERSIM and SRCDIR set; prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"

# expect_json NAME KEY VALUE CMD...: the first row's KEY prints as VALUE.
expect_row() {
	name=$1 key=$2 want=$3; shift 3
	out=$("$@" 2>"$T/err") || { bad "$name (exit $?: $(cat "$T/err"))"; return; }
	got=$(printf '%s\n' "$out" | sed -n "s/.*\"rows\":\[{[^]]*\"$key\":\([^,}]*\).*/\1/p")
	if [ "$got" = "$want" ]; then ok "$name: $key = $got"; else bad "$name: $key = '$got', want '$want'"; fi
}

# expect_fail NAME PATTERN ARGS...: exit 2, stderr matches PATTERN, no database.
expect_fail() {
	name=$1 pat=$2; shift 2
	rm -f "$T/bad.db"
	"$CS" "$@" --db "$T/bad.db" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 2 ]; then bad "$name: exit $rc, want 2"; return; fi
	if ! grep -q -- "$pat" "$T/err"; then bad "$name: message '$(cat "$T/err")' lacks '$pat'"; return; fi
	if [ -e "$T/bad.db" ]; then bad "$name: left a database behind"; return; fi
	ok "$name: exit 2, $(head -c 100 "$T/err")"
}

IDEAL="collective --op allreduce --cluster ideal --ranks 8 --alpha 10us --bw 50GB/s -b 1GB -e 1GB --json"
expect_row "ring all-reduce (C1)" time_s 0.03514 "$CS" $IDEAL --algo ring
expect_row "rd all-reduce (C3)" time_s 0.06003 "$CS" $IDEAL --algo rd
expect_row "ring busbw at alpha 0 (C6)" busbw_GBps 50 "$CS" collective --op allreduce --algo ring \
	--cluster ideal --ranks 8 --alpha 0 --bw 50GB/s -b 1GB -e 1GB --json
expect_row "analytic fidelity" time_s 0.03514 "$CS" $IDEAL --algo ring --fidelity analytic

# dgx-h100, 4 nodes, 1 GiB: hier beats the single-channel ring.
t_hier=$("$CS" collective --op allreduce --algo hier --cluster dgx-h100 --nodes 4 -b 1GiB -e 1GiB --json |
	sed 's/.*"time_s":\([^,]*\).*/\1/')
t_ring1=$("$CS" collective --op allreduce --algo ring --channels 1 --cluster dgx-h100 --nodes 4 -b 1GiB -e 1GiB --json |
	sed 's/.*"time_s":\([^,]*\).*/\1/')
if awk "BEGIN { exit !($t_hier < $t_ring1) }"; then ok "hier ($t_hier s) beats 1-channel ring ($t_ring1 s)"
else bad "hier ($t_hier s) does not beat 1-channel ring ($t_ring1 s)"; fi

expect_fail "unknown op" "option --op" collective --op allsum --ranks 8 -b 1MB -e 1MB
expect_fail "unknown algorithm" "option --algo" collective --algo tree --ranks 8 -b 1MB -e 1MB
expect_fail "zero ranks" "\-\-ranks" collective --ranks 0 -b 1MB -e 1MB
expect_fail "too many ranks" "1048576" collective --ranks 1048577 -b 1MB -e 1MB
expect_fail "negative size" "must not be negative" collective --ranks 8 -b -1MB -e 1MB
expect_fail "overflowing size" "too large" collective --ranks 8 -b 1MB -e 99999PB
expect_fail "size without unit" "no unit" collective --ranks 8 -b 1000 -e 1MB
expect_fail "rate without unit" "option --bw" collective --ranks 8 --bw 50 -b 1MB -e 1MB
expect_fail "ambiguous unit" "ambiguous unit" collective --ranks 8 -b 128M -e 1GB
expect_fail "nodes and ranks" "exactly one" collective --ranks 8 --nodes 1 -b 1MB -e 1MB
expect_fail "hd on 6 ranks" "power-of-two" collective --algo hd --ranks 6 -b 1MB -e 1MB
expect_fail "unknown preset" "no cluster preset named" collective --cluster dgx-z --ranks 8 -b 1MB -e 1MB
expect_fail "bad --set key" "unknown key cluster.nvlnk" collective --cluster dgx-h100 --nodes 1 \
	--set cluster.nvlnk.bandwidth=1GB/s -b 1MB -e 1MB
expect_fail "alpha on a preset" "ideal cluster" collective --cluster dgx-h100 --nodes 1 --alpha 1us -b 1MB -e 1MB
expect_fail "unknown option" "unknown option" collective --rank 8 -b 1MB -e 1MB

# A database: complete runs, timelines, link totals; export as CSV.
"$CS" collective --op allreduce --algo ring,hier --cluster dgx-h100 --nodes 2 -b 1MB -e 4MB \
	--db "$T/r.db" >/dev/null 2>"$T/err" && ok "collective --db" || bad "collective --db: $(cat "$T/err")"
n=$(sqlite3 "$T/r.db" "SELECT count(*) FROM runs WHERE status='complete'")
[ "$n" = 2 ] && ok "two complete runs" || bad "complete runs: $n"
n=$(sqlite3 "$T/r.db" "SELECT count(*) FROM ops WHERE run_id=1")
[ "$n" = 48 ] && ok "48 op rows (16 ranks x 3 sizes)" || bad "op rows: $n"
n=$(sqlite3 "$T/r.db" "SELECT count(*) FROM links WHERE run_id=1 AND bytes > 0")
[ "$n" -gt 0 ] && ok "link totals stored ($n links)" || bad "no link totals"
t_db=$(sqlite3 "$T/r.db" "SELECT printf('%.6f', (max(end_ps)-min(start_ps))/1e6) FROM ops WHERE run_id=1 AND name LIKE 'allreduce 1000000B%'")
t_row=$(sqlite3 "$T/r.db" "SELECT printf('%.6f', time_s*1e6) FROM collective_results WHERE run_id=1 AND bytes=1e6")
[ "$t_db" = "$t_row" ] && ok "time recomputed from the timeline ($t_db us)" || bad "timeline $t_db us vs row $t_row us"
"$CS" export "$T/r.db" --csv "$T/ops.csv" 2>"$T/err" && ok "export --csv" || bad "export: $(cat "$T/err")"
lines=$(wc -l < "$T/ops.csv")
[ "$lines" = 49 ] && ok "CSV has a header and 48 rows" || bad "CSV lines: $lines"
head -1 "$T/ops.csv" | grep -q '^run_id,rank,stream,kind,name,start_ps,end_ps,bytes,flops,id,layer,mb,chunk,phase,kernel$' &&
	ok "CSV header" || bad "CSV header: $(head -1 "$T/ops.csv")"
"$CS" export "$T/r.db" --table links --run 2 --csv - | head -1 | grep -q '^run_id,link,name' &&
	ok "export --table links" || bad "export --table links"
"$CS" export "$T/nope.db" --csv - >/dev/null 2>&1; [ $? = 2 ] && ok "export of a missing file: exit 2" || bad "export missing file"
"$CS" export "$T/r.db" --run 9 --csv - >/dev/null 2>"$T/err"; [ $? = 2 ] && grep -q "no run 9" "$T/err" &&
	ok "export of a missing run: exit 2" || bad "export missing run"
"$CS" collective --ranks 4 -b 1MB -e 1MB --csv "$T/rows.csv" >/dev/null &&
	[ "$(wc -l < "$T/rows.csv")" = 2 ] && ok "collective --csv" || bad "collective --csv"

# Determinism: the same command twice gives the same report (but wall_s)
# and the same stored timeline.
for i in 1 2; do
	"$CS" collective --op allreduce --algo ring --cluster dgx-h100 --nodes 2 -b 1MB -e 8MB \
		--json --db "$T/d$i.db" | sed 's/"wall_s":[^}]*//' > "$T/d$i.json"
	sqlite3 "$T/d$i.db" "SELECT rank,stream,kind,name,start_ps,end_ps,bytes FROM ops ORDER BY id" > "$T/d$i.ops"
	sqlite3 "$T/d$i.db" "SELECT link,name,bytes,busy_ps FROM links ORDER BY link" >> "$T/d$i.ops"
done
cmp -s "$T/d1.json" "$T/d2.json" && ok "same report twice" || bad "reports differ"
cmp -s "$T/d1.ops" "$T/d2.ops" && [ -s "$T/d1.ops" ] && ok "same timeline twice" || bad "timelines differ"

# Every subcommand answers; docs/cli.md is what help --markdown prints.
for c in plan collective export report presets help version; do
	"$CS" help "$c" >/dev/null && ok "help $c" || bad "help $c"
done
"$CS" presets | grep -q "dgx-h100" && ok "presets" || bad "presets"
"$CS" version | grep -q "^clustersim " && ok "version" || bad "version"
"$CS" help --markdown > "$T/cli.md"
if cmp -s "$T/cli.md" "$SRC/docs/cli.md"; then ok "docs/cli.md is current"
else bad "docs/cli.md differs from 'clustersim help --markdown' (regenerate it)"; fi
"$CS" help --keys > "$T/keys.md"
sed -n '/^<!-- keys -->$/,/^<!-- \/keys -->$/p' "$SRC/docs/scenario.md" | sed '1d;$d' > "$T/keys.doc"
if cmp -s "$T/keys.md" "$T/keys.doc"; then ok "docs/scenario.md key table is current"
else bad "docs/scenario.md key table differs from 'clustersim help --keys' (regenerate it)"; fi
"$CS" help --job-keys > "$T/jkeys.md"
sed -n '/^<!-- job-keys -->$/,/^<!-- \/job-keys -->$/p' "$SRC/docs/scenario.md" | sed '1d;$d' > "$T/jkeys.doc"
if [ -s "$T/jkeys.md" ] && cmp -s "$T/jkeys.md" "$T/jkeys.doc"; then ok "docs/scenario.md job key table is current"
else bad "docs/scenario.md job key table differs from 'clustersim help --job-keys' (regenerate it)"; fi
"$CS" frobnicate >/dev/null 2>&1; [ $? = 2 ] && ok "unknown command: exit 2" || bad "unknown command"

finish
