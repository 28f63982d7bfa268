#!/bin/sh
# test_calibrate.sh - `clustersim calibrate nccl`: the published A100 sweep
# (scenarios/validation/nccl/) gives the fit docs/calibration.md quotes; the preset
# written with -o loads from a scenario's clusters/ folder, and `clustersim
# collective` on it reproduces the fitted ring time; JSON is well-formed;
# bad input exits 2 naming the file, line or option and writes nothing.
# Run by `make check` with CLUSTERSIM and SRCDIR set; prints "N passed, N
# failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"

FIX=$SRC/scenarios/validation/nccl
A100=$FIX/a100-all_reduce_perf.txt

if "$CS" calibrate nccl "$A100" >"$T/out" 2>"$T/err"; then ok "fit runs"
else bad "fit: $(cat "$T/err")"; fi
if grep -q "alpha 13.1 us per step .*bus bandwidth 230.2 GB/s" "$T/out" &&
   grep -q "fitted on 10 times from 33.6 MB to 17.2 GB" "$T/out" &&
   grep -q "median 2.2 %, worst 9.4 %" "$T/out"; then ok "fit figures"
else bad "fit figures: $(tail -4 "$T/out")"; fi
# Every measured size is listed, the fitted ones marked.
if [ "$(grep -c '  fit$' "$T/out")" = 10 ] && [ "$(grep -c '%' "$T/out")" = 21 ]; then
	ok "residual table"
else bad "residual table: $(grep -c '  fit$' "$T/out") fitted rows"; fi

# The range can be chosen.
"$CS" calibrate nccl "$A100" --fit-min 1GiB >"$T/out" 2>&1
if grep -q "fitted on 5 times from 1.07 GB" "$T/out" &&
   grep -q "(--fit-min/--fit-max)" "$T/out"; then ok "--fit-min"
else bad "--fit-min: $(tail -3 "$T/out")"; fi

# JSON.
"$CS" calibrate nccl "$A100" --json >"$T/j" 2>&1
if grep -q '"scope": "nvlink", "ranks": 8, "nodes": 1' "$T/j" &&
   [ "$(grep -o '"in_fit": true' "$T/j" | wc -l)" = 10 ] &&
   sqlite3 :memory: "select json_valid(readfile('$T/j'))" 2>/dev/null | grep -qx 1; then
	ok "json"
else bad "json: $(head -c 300 "$T/j")"; fi

# A preset a scenario can name.
mkdir -p "$T/sc/clusters"
if "$CS" calibrate nccl "$A100" --base dgx-a100 -o "$T/sc/clusters/a100-fit.yaml" \
	>"$T/out" 2>&1 && grep -q "wrote $T/sc/clusters/a100-fit.yaml" "$T/out"; then
	ok "preset written"
else bad "preset: $(cat "$T/out")"; fi
if grep -q "bandwidth: 230.2" "$T/sc/clusters/a100-fit.yaml" &&
   grep -q "latency: 13.07" "$T/sc/clusters/a100-fit.yaml" &&
   grep -q "gpu: A100-SXM-80GB" "$T/sc/clusters/a100-fit.yaml" &&
   ! grep -q "GPUs take part" "$T/out" "$T/sc/clusters/a100-fit.yaml"; then
	ok "preset figures (8 ranks of 8: no caveat)"
else bad "preset figures: $(cat "$T/sc/clusters/a100-fit.yaml")"; fi
cat >"$T/sc/s.yaml" <<'YAML'
cluster:
  preset: a100-fit
  nodes: 2
model:
  preset: gpt3-1.3b
training:
  seq: 2048
  global_batch: 16
parallel:
  tp: 8
YAML
if "$CS" run "$T/sc/s.yaml" --set sim.fidelity=analytic >"$T/out" 2>&1 &&
   grep -q "a100-fit" "$T/out"; then ok "a scenario names the preset"
else bad "scenario with the preset: $(head -5 "$T/out")"; fi
# The simulated ring reproduces the fit: 1 GiB over 8 GPUs, 14 x 13.0771 us +
# 1.75 GiB / 230.204 GB/s = 8345.6 us (the table's fit column).
# (collective takes presets from the data folder: the fitted figures are set
# on dgx-a100.)
"$CS" collective --cluster dgx-a100 --nodes 1 --algo ring -b 1GiB -e 1GiB \
	--set cluster.nvlink.bandwidth=230.204GB/s --set cluster.nvlink.latency=13.0771us \
	>"$T/out" 2>&1
if grep -q "1073741824 *8345.6" "$T/out"; then ok "collective reproduces the fit"
else bad "collective: $(cat "$T/out")"; fi

# Across nodes: a log the simulator wrote (ring all-reduce over 2 dgx-h100
# nodes, laid out as all_reduce_perf prints it) gives back dgx-h100's own
# network figures, 50 GB/s per NIC and 5 us.
"$CS" collective --cluster dgx-h100 --nodes 2 --algo ring -b 1MiB -e 4GiB --fidelity analytic \
	--csv "$T/two.csv" >/dev/null 2>&1
{
	echo "# Collective test starting: all_reduce_perf"
	for r in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
		printf '#  Rank %2d Group  0 Pid %5d on %8s device %2d [0x00] NVIDIA H100\n' \
			"$r" "$r" "node$((r / 8))" "$((r % 8))"
	done
	echo "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
	awk -F, 'NR > 1 { printf "%12.0f %12.0f float sum -1 %.2f %.2f %.2f 0 N/A N/A N/A N/A\n", $5, $5 / 4, $6 * 1e6, $7, $8 }' "$T/two.csv"
} >"$T/two-nodes.txt"
if "$CS" calibrate nccl "$T/two-nodes.txt" --base dgx-h100 -o "$T/two.yaml" >"$T/out" 2>&1 &&
   grep -q "network (across nodes), ring: alpha 5 us per step .*bus bandwidth 400 GB/s" "$T/out" &&
   grep -q "bandwidth: 50.00" "$T/two.yaml" && grep -q "latency: 5.000" "$T/two.yaml" &&
   grep -q "bandwidth: 450GB/s" "$T/two.yaml"; then ok "network figures across nodes"
else bad "network figures: $(cat "$T/out") $(grep -A3 network: "$T/two.yaml")"; fi

# Two logs alike but for their hosts (the same sweep, ranks 4-7 moved to a
# second host): each log's table names the scope it was fitted in.
sed 's/^\(#  Rank  [4-7] .* on  *\)node0/\1node1/' "$A100" >"$T/a100-two-hosts.txt"
if "$CS" calibrate nccl "$A100" "$T/a100-two-hosts.txt" >"$T/out" 2>&1 &&
   grep -q "^# .*a100-all_reduce_perf.txt: .*inside one node" "$T/out" &&
   grep -q "^# .*a100-two-hosts.txt: .*across nodes" "$T/out"; then
	ok "each log in its own scope"
else bad "scopes: $(grep '^# ' "$T/out")"; fi

# The H200 sweeps of tools/measure_allreduce.py (scenarios/calibration/h200/nccl/:
# 4 GPUs, in place, NCCL's INFO lines mixed in): the figures
# docs/calibration.md quotes, jointly over the four default sweeps; without
# --inplace the error says which times exist.
H200NCCL=$SRC/scenarios/calibration/h200/nccl
if "$CS" calibrate nccl --inplace "$H200NCCL/all_reduce_perf-4gpu-default.txt" >"$T/out" 2>&1 &&
   grep -q "all_reduce_perf, 4 ranks, inside one node, in-place times" "$T/out" &&
   grep -q "alpha 4.33 us per step .*bus bandwidth 348.9 GB/s" "$T/out" &&
   grep -q "fitted on 9 times from 8.39 MB to 2.15 GB" "$T/out" &&
   grep -q "median 1.9 %, worst 3.3 %" "$T/out"; then ok "H200 sweep"
else bad "H200 sweep: $(tail -4 "$T/out")"; fi
if "$CS" calibrate nccl --inplace "$H200NCCL"/all_reduce_perf-4gpu-default*.txt >"$T/out" 2>&1 &&
   grep -q "alpha 4.34 us per step .*bus bandwidth 348.1 GB/s" "$T/out" &&
   grep -q "fitted on 36 times" "$T/out"; then ok "H200 sweeps jointly"
else bad "H200 sweeps jointly: $(tail -4 "$T/out")"; fi
if "$CS" calibrate nccl "$H200NCCL/all_reduce_perf-4gpu-default.txt" >"$T/out" 2>&1; then
	bad "out-of-place fit of in-place logs succeeded"
elif grep -q "no out-of-place times (fit the in-place ones with --inplace)" "$T/out"; then
	ok "in-place logs without --inplace"
else bad "in-place logs without --inplace: $(cat "$T/out")"; fi

# The shipped preset dgx-h200-nccl is what calibrate writes from them (its
# first line, the command, names the output file).
tail -n +2 "$SRC/scenarios/clusters/dgx-h200-nccl.yaml" >"$T/h200-want"
if (cd "$SRC" && "$CS" calibrate nccl --inplace \
	scenarios/calibration/h200/nccl/all_reduce_perf-4gpu-default*.txt --base dgx-h200 \
	-o "$T/h200.yaml") >"$T/out" 2>&1 &&
   tail -n +2 "$T/h200.yaml" | cmp -s - "$T/h200-want"; then
	ok "dgx-h200-nccl is the fit of the shipped sweeps"
else bad "dgx-h200-nccl: $(cat "$T/out"; tail -n +2 "$T/h200.yaml" | diff - "$T/h200-want")"; fi
# Sweeps of 4 of a node's 8 GPUs: the preset and the output say so.
if grep -q "^The NVLink figures come from logs of 4 of the node's 8 GPUs; a ring's bus bandwidth depends on how many GPUs take part" "$T/out" &&
   grep -q "^# The NVLink figures come from logs of 4 of the node's 8 GPUs" "$T/h200.yaml"; then
	ok "caveat of 4 ranks of 8"
else bad "caveat: $(tail -3 "$T/out")"; fi

# calibrate gemm on the shipped H200 table: the figures docs/calibration.md
# quotes; a folder next to a scenario that the scenario names gives the same
# step as the shipped table it was made from.
H200=$SRC/scenarios/calibration/h200/gemm.csv
if "$CS" calibrate gemm "$H200" --gpu H200-SXM-141GB >"$T/out" 2>"$T/err" &&
   grep -q "192 GEMMs measured on H200-SXM-141GB (dense bf16 peak 989.4 TFLOP/s)" "$T/out" &&
   grep -q "FLOPs only  *median 3.55 %, worst 23.8 %" "$T/out" &&
   grep -q "FLOPs x smallest dimension  median 3.55 %, worst 22.1 %" "$T/out" &&
   grep -q "^ *512 *0.9571$" "$T/out"; then ok "gemm fit"
else bad "gemm fit: $(cat "$T/out" "$T/err" | head -8)"; fi
mkdir -p "$T/g/calibration"
if "$CS" calibrate gemm "$H200" --gpu H200-SXM-141GB -o "$T/g/calibration/mine" >"$T/out" 2>&1 &&
   [ "$(cat "$T/g/calibration/mine/gpu.txt")" = H200-SXM-141GB ] &&
   [ "$(wc -l <"$T/g/calibration/mine/gemm.csv")" = 193 ] &&
   [ "$(grep -c '^flops_mindim_g,' "$T/g/calibration/mine/efficiency.csv")" = 5 ] &&
   cmp -s "$T/g/calibration/mine/attention.csv" "$SRC/scenarios/calibration/h200/attention.csv"; then
	ok "gemm folder"
else bad "gemm folder: $(cat "$T/out") $(ls "$T/g/calibration/mine")"; fi
cp "$SRC/scenarios/gpt3-1.3b-h200.yaml" "$T/g/s.yaml"
a=$("$CS" run "$T/g/s.yaml" --set compute.efficiency=mine --json 2>&1 | grep -o '"step_time_s":[0-9.e-]*')
b=$("$CS" run "$T/g/s.yaml" --json 2>&1 | grep -o '"step_time_s":[0-9.e-]*')
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "a scenario names the folder ($a)"
else bad "folder in a scenario: '$a' vs '$b'"; fi
"$CS" calibrate gemm "$H200" --gpu H200-SXM-141GB --json >"$T/j" 2>&1
if sqlite3 :memory: "select json_valid(readfile('$T/j'))" 2>/dev/null | grep -qx 1 &&
   grep -q '"rows": 192' "$T/j"; then ok "gemm json"
else bad "gemm json: $(head -c 300 "$T/j")"; fi
echo "NoSuchGPU" >"$T/g/calibration/mine/gpu.txt"
if ! "$CS" run "$T/g/s.yaml" --set compute.efficiency=mine >"$T/out" 2>&1 &&
   grep -q "gpu.txt: unknown GPU preset 'NoSuchGPU'" "$T/out"; then ok "bad gpu.txt named"
else bad "bad gpu.txt: $(cat "$T/out")"; fi
printf 'M,N,K,flops\n1,2,3,12\n' >"$T/nocol.csv"
printf 'M,N,K,flops,ms\n512,512,512,2.7e8,0.001\n512,512,x,2.7e8,0.002\n' >"$T/badrow.csv"

# Bad input: exit 2, a message, no file written.
expect_bad() {
	name=$1 want=$2; shift 2
	rm -f "$T/p.yaml"
	"$CS" calibrate "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" = 2 ] && grep -q -- "$want" "$T/err" && [ ! -e "$T/p.yaml" ]; then ok "$name"
	else bad "$name: exit $rc, $(cat "$T/err")"; fi
}
printf '#  size count type time algbw busbw\n 1024 256 float 20.0 0.05\n' >"$T/short.txt"
: >"$T/empty.txt"
grep -v "Collective test starting" "$A100" >"$T/results.txt"
printf 'garbage\n\001\002\n' >"$T/junk.txt"
expect_bad "no kind" "expected what to calibrate"
expect_bad "unknown kind" "unknown calibration 'gpu'" gpu "$A100"
expect_bad "no file" "expected at least one nccl-tests log" nccl
expect_bad "missing file" "nope.txt: cannot read" nccl "$T/nope.txt"
expect_bad "empty file" "empty file" nccl "$T/empty.txt"
expect_bad "garbage" "no nccl-tests table" nccl "$T/junk.txt"
expect_bad "short row" "short.txt:2: 5 columns: expected 6" nccl "$T/short.txt"
expect_bad "bad --op" "unknown collective 'bcast'" nccl "$A100" --op bcast
expect_bad "no op" "which collective" nccl "$T/results.txt"
expect_bad "-o without --base" "needs --base" nccl "$A100" -o "$T/p.yaml"
expect_bad "unknown base" "no cluster preset named 'nosuch'" nccl "$A100" --base nosuch -o "$T/p.yaml"
expect_bad "empty range" "range is empty" nccl "$A100" --fit-min 1GiB --fit-max 1MiB
expect_bad "one size" "at least two sizes" nccl "$A100" --fit-min 1GiB --fit-max 1GiB
expect_bad "ranks of one node" "9 ranks" nccl "$A100" --ranks 9 --base dgx-a100 -o "$T/p.yaml"
expect_bad "gemm without --gpu" "--gpu PRESET is required" gemm "$H200"
expect_bad "gemm unknown gpu" "unknown GPU preset 'H900'" gemm "$H200" --gpu H900
expect_bad "gemm no file" "expected one measured table" gemm --gpu H200-SXM-141GB
expect_bad "gemm missing column" "nocol.csv:1: no column 'ms'" gemm "$T/nocol.csv" --gpu H200-SXM-141GB
expect_bad "gemm bad number" "badrow.csv:3: column 'K': expected a decimal number" gemm "$T/badrow.csv" --gpu H200-SXM-141GB
expect_bad "gemm faster than the GPU" "does not belong to this GPU" gemm "$H200" --gpu A100-SXM-80GB
expect_bad "gemm unknown tables" "no such table" gemm "$H200" --gpu H200-SXM-141GB --tables nope -o "$T/p.yaml"
finish
