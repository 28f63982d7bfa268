#!/bin/sh
# bench/scale.sh - the scale table: one training step at 64, 512, 4,096 and
# 16,384 GPUs in each fidelity, with and without a database.
#
#   bench/scale.sh CLUSTERSIM [--quick]
#
# CLUSTERSIM is the clustersim binary. Each case runs `clustersim run ...
# --json` under GNU time (the `time` package): wall_s is the run's own
# wall_s (building the programs and simulating), events and step_s come from
# its JSON, rss_MiB is the peak resident set of the process. The same case
# then runs with `--db` (record auto: all timelines up to 1,024 GPUs, the
# sample above) into a fresh file: db_wall_s is that run's wall time (the
# simulation plus every row written), db_MiB the file's size after it.
# A last line records every timeline of a 1,024-GPU step (`--record all`)
# and gives the rows written per second of the database's share of the wall
# time. --quick skips the 16,384-GPU flow case (about a minute).
#
# The cases: Llama-3-70B on 64 GPUs (TP 8, PP 8) and on 512 (TP 8, PP 4,
# DP 16), Llama-3-405B in the layout of scenarios/llama3-405b-h100x16384.yaml
# with DP 32 (4,096 GPUs) and DP 128 (16,384), the global batch keeping 16
# micro-batches per replica. Every run is pinned to the last CPU with
# taskset (util-linux) where it exists: the targets are for one core, and a
# run that moves between cores loses its caches. docs/performance.md records
# the table.
set -eu

cs=${1:?usage: bench/scale.sh CLUSTERSIM [--quick]}
quick=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
gnutime=/usr/bin/time
[ -x "$gnutime" ] || { echo "scale.sh: needs GNU time ($gnutime, Debian package time)" >&2; exit 2; }
# The last CPU this script may run on (a cpuset need not start at 0).
pin=
last=$(awk -F '[,-]' '/^Cpus_allowed_list:/ { print $NF }' /proc/self/status 2>/dev/null || true)
if command -v taskset >/dev/null 2>&1 && [ -n "$last" ]; then
	pin="taskset -c $last"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# json KEY FILE: a number from clustersim's one-line JSON report.
json() { sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p" "$2"; }

# case GPUS FIDELITY SCENARIO [--set ...]: one row of the table.
row() {
	gpus=$1 fid=$2 scen=$3
	shift 3
	"$gnutime" -f '%M' -o "$tmp/rss" $pin "$cs" run "$src/scenarios/$scen" "$@" --fidelity "$fid" \
		--json >"$tmp/out.json"
	rss=$(tail -n 1 "$tmp/rss")
	wall=$(json wall_s "$tmp/out.json")
	events=$(json events "$tmp/out.json")
	step=$(json step_time_s "$tmp/out.json")
	rm -f "$tmp/db" "$tmp/db-wal" "$tmp/db-shm"
	"$gnutime" -f '%e %M' -o "$tmp/dbt" $pin "$cs" run "$src/scenarios/$scen" "$@" --fidelity "$fid" \
		--db "$tmp/db" >/dev/null
	set -- $(tail -n 1 "$tmp/dbt")
	dbwall=$1 dbrss=$2
	dbsize=$(wc -c <"$tmp/db")
	awk -v g="$gpus" -v f="$fid" -v w="$wall" -v e="$events" -v r="$rss" -v dw="$dbwall" \
	    -v dr="$dbrss" -v ds="$dbsize" -v s="$step" 'BEGIN {
		printf "%6d  %-8s %9.2f %12d %9.2f %9.1f %10.2f %9.1f %9.1f %9.4f\n",
		       g, f, w, e, e / w / 1e6, r / 1024, dw, ds / 1048576, dr / 1024, s }'
}

echo "machine: $(uname -m), $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)"
echo "commit:  $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "command: bench/scale.sh $cs${quick:+ $quick}${pin:+ (each run under $pin)}"
echo
printf "%6s  %-8s %9s %12s %9s %9s %10s %9s %9s %9s\n" gpus fidelity wall_s events \
	Mev_per_s rss_MiB db_wall_s db_MiB db_rssMiB step_s
big405="llama3-405b-h100x16384.yaml"
for fid in analytic flow; do
	row 64 "$fid" llama3-70b-tp8-pp8.yaml
	row 512 "$fid" llama3-70b-h100x512.yaml
	row 4096 "$fid" "$big405" --set cluster.nodes=512 --set parallel.dp=32 \
		--set training.global_batch=512
	[ "$fid/$quick" = flow/--quick ] || row 16384 "$fid" "$big405"
done

# Every timeline of 1,024 GPUs: rows per second of the database's share of
# the elapsed time (GNU time's, so that the last commit is counted).
scen="$src/scenarios/llama3-70b-h100x512.yaml"
set -- --set cluster.nodes=128 --set parallel.dp=32 --set training.global_batch=512
"$gnutime" -f '%e' -o "$tmp/t0" $pin "$cs" run "$scen" "$@" >/dev/null
rm -f "$tmp/db" "$tmp/db-wal" "$tmp/db-shm"
"$gnutime" -f '%e %M' -o "$tmp/t1" $pin "$cs" run "$scen" "$@" --record all --db "$tmp/db" >/dev/null
rows=$(sqlite3 "$tmp/db" "SELECT (SELECT count(*) FROM timeline) + (SELECT count(*) FROM memory)
	+ (SELECT count(*) FROM op_defs) + (SELECT count(*) FROM timeline_blocks)
	+ (SELECT count(*) FROM ranks)")
echo
awk -v a="$(tail -n 1 "$tmp/t0")" -v w="$(tail -n 1 "$tmp/t1")" -v n="$rows" \
    -v s="$(wc -c <"$tmp/db")" 'BEGIN {
	split(w, x, " ")
	printf "record all, 1,024 GPUs (flow): %d rows; %.2f s with the database, %.2f s without;\n", n, x[1], a
	printf "  %.2f M rows/s over the difference; %.1f MiB; peak RSS %.1f MiB\n", n / (x[1] - a) / 1e6,
	       s / 1048576, x[2] / 1024 }'
