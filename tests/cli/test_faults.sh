#!/bin/sh
# test_faults.sh - failed and degraded links (cluster.faults): a ring
# all-reduce over 2 DGX H100 nodes with node0's NIC 0 failed still runs,
# its traffic crossing NVLink to another rail (PXN) so the failed NIC
# carries nothing and another carries twice its share; a NIC at half its
# bandwidth slows the ring alike; a training step runs around a failed NIC
# and is slower; where no route exists (every NIC of a node, or a GPU's
# NVLink) the run is refused with exit 2 naming the link; malformed faults
# exit 2. Run by `make check` with CLUSTERSIM and SRCDIR set; prints "N
# passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
command -v sqlite3 >/dev/null 2>&1 || { bad "sqlite3 is not installed"; finish; exit 1; }
coll() {
	"$CS" collective --cluster dgx-h100 --nodes 2 --algo ring -b 256MiB -e 256MiB --json "$@"
}
t_of() { sed -n 's/.*"time_s":\([0-9.e+-]*\).*/\1/p' "$1" | head -1; }

coll >"$T/ok.json" 2>"$T/err" || bad "healthy ring: $(cat "$T/err")"
coll --set cluster.faults=node0.nic0 --db "$T/f.db" >"$T/f.json" 2>"$T/err"
rc=$?
[ $rc = 0 ] && ok "a failed NIC: the ring still runs" || bad "failed NIC: exit $rc: $(cat "$T/err")"
b0=$(sqlite3 "$T/f.db" "SELECT coalesce(sum(bytes), 0) FROM links WHERE name LIKE 'node0.nic0.%'")
b1=$(sqlite3 "$T/f.db" "SELECT sum(bytes) FROM links WHERE name = 'node0.nic1.tx'")
b2=$(sqlite3 "$T/f.db" "SELECT sum(bytes) FROM links WHERE name = 'node0.nic2.tx'")
nv=$(sqlite3 "$T/f.db" "SELECT sum(bytes) FROM links WHERE name = 'node0.gpu1.nvlink.rx'")
[ "$b0" = 0 ] || [ "$b0" = 0.0 ] && ok "the failed NIC carries nothing" || bad "failed NIC carried $b0 bytes"
awk "BEGIN { exit !($b1 == 2 * $b2) }" && ok "its rail's traffic went to NIC 1 (PXN): $b1 = 2 x $b2 bytes" ||
	bad "rerouted bytes: nic1 $b1, nic2 $b2"
awk "BEGIN { exit !($nv > 0) }" && ok "over NVLink to rail 1's GPU ($nv bytes)" || bad "no NVLink detour"
t0=$(t_of "$T/ok.json") t1=$(t_of "$T/f.json")
awk "BEGIN { exit !($t1 > 1.5 * $t0) }" && ok "slower: $t0 -> $t1 s" || bad "failed NIC: $t0 -> $t1"
coll --set "cluster.faults=node0.nic0=0.5" >"$T/h.json" 2>"$T/err" || bad "degraded: $(cat "$T/err")"
t2=$(t_of "$T/h.json")
awk "BEGIN { exit !($t2 > 1.5 * $t0) }" && ok "a NIC at half bandwidth: $t0 -> $t2 s" || bad "degraded: $t0 -> $t2"
coll --fidelity analytic --set cluster.faults=node0.nic0 >"$T/a.json" 2>"$T/err" &&
	awk "BEGIN { exit !($(t_of "$T/a.json") > 1.5 * $t0) }" && ok "analytic fidelity reroutes too" ||
	bad "analytic: $(cat "$T/err")"

# A training step around a failed NIC.
SC=$SRC/scenarios/zero-fsdp-compare.yaml
"$CS" run "$SC" --json >"$T/r0.json" 2>"$T/err" || bad "healthy run: $(cat "$T/err")"
"$CS" run "$SC" --set cluster.faults=node1.nic5 --json >"$T/r1.json" 2>"$T/err" ||
	bad "run with a failed NIC: $(cat "$T/err")"
s0=$(sed -n 's/.*"step_time_s":\([0-9.e+-]*\).*/\1/p' "$T/r0.json")
s1=$(sed -n 's/.*"step_time_s":\([0-9.e+-]*\).*/\1/p' "$T/r1.json")
awk "BEGIN { exit !($s1 >= $s0) }" && ok "training step around a failed NIC: $s0 -> $s1 s" ||
	bad "step: $s0 -> $s1"

# No route, and bad input.
expect2() {
	want=$1; shift
	"$@" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc = 2 ] && grep -q -- "$want" "$T/err" && ok "refused: $want" || bad "$want: exit $rc: $(cat "$T/err")"
}
all=node0.nic0
for k in 1 2 3 4 5 6 7; do all="$all,node0.nic$k"; done
expect2 "every NIC of node0 has failed" coll --set "cluster.faults=$all"
expect2 "node0.gpu3.nvlink has failed" coll --set cluster.faults=node0.gpu3.nvlink
expect2 "cluster.faults: node5.nic0: the cluster has 2 nodes" coll --set cluster.faults=node5.nic0
expect2 "node0.nic1 is listed twice" coll --set "cluster.faults=node0.nic1, node0.nic1=0.5"
expect2 "cluster.faults: node0.nic8: a node has 8 NICs" coll --set cluster.faults=node0.nic8
expect2 "cluster.faults: 'node0.port1'" coll --set cluster.faults=node0.port1
expect2 "after '='" coll --set "cluster.faults=node0.nic1=1.5"
expect2 "the ideal cluster has no NICs" "$CS" collective --ranks 8 -b 1MB -e 1MB --set cluster.faults=node0.nic0
finish
