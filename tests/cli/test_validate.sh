#!/bin/sh
# test_validate.sh - `clustersim validate` on a small set of cases copied
# from scenarios/validation/ (two training runs, one memory figure, a sweep,
# a single figure, and a sweep with in-place times only): the page lists
# each with its error and the group summaries; -o then --check passes, a
# changed page fails with exit 1 naming the line; JSON is well-formed;
# malformed case tables exit 2 naming file, line and column. The whole set
# (make validate-check) runs as its own CI stage. Run by `make check` with
# CLUSTERSIM and SRCDIR set; prints "N passed, N failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"

V=$SRC/scenarios/validation
D=$T/cases
mkdir -p "$D/nccl"
cp "$V/megatron_sc21_t1_1.7B.yaml" "$V/korthikanti_t5_22B_seqsel.yaml" \
	"$V/zero_mem_7p5b_nd64_stage0.yaml" "$D/"
cp "$V/nccl/a100-all_reduce_perf.txt" "$D/nccl/"
{ head -1 "$V/cases.csv"; grep -E '^(megatron_sc21_t1_1.7B|korthikanti_t5_22B_seqsel|zero_mem_7p5b_nd64_stage0),' "$V/cases.csv"; } >"$D/cases.csv"
{ head -1 "$V/collectives.csv"; grep -E '^(nccl_a100_8gpu_ar|nccl_h100_8gpu_ring_busbw),' "$V/collectives.csv"; } >"$D/collectives.csv"

if "$CS" validate --quick --dir "$D" >"$T/page.md" 2>"$T/err"; then ok "validate runs"
else bad "validate: $(cat "$T/err")"; fi
if grep -q "^| megatron_sc21_t1_1.7B | 32 | 1 | 1 | 32 | 1 | TFLOP/s per GPU | 137 | [0-9.]* | [-+][0-9.]* % |$" "$T/page.md" &&
   grep -q "^| korthikanti_t5_22B_seqsel | 8 | 8 | 1 | 1 | 1 | iteration s | 1.1 | " "$T/page.md" &&
   grep -q "^| zero_mem_7p5b_nd64_stage0 .* | 120 | 119.35 | -0.5 % (needs .* GB and .* GB reserved, of .* GB: not run) |$" "$T/page.md"; then
	ok "case rows"
else bad "case rows: $(grep '^| [mkz]' "$T/page.md")"; fi
if grep -q "Training throughput: median absolute error [0-9.]* % over 2 cases" "$T/page.md" &&
   grep -q "^| megatron_sc21 | 1 |" "$T/page.md" && grep -q "^| zero_mem | 1 | 0.5 % | 0.5 % |" "$T/page.md"; then
	ok "summaries"
else bad "summaries: $(grep -A6 '^## Training' "$T/page.md")"; fi
if grep -q "^| dgx-a100-nccl | A100-SXM-80GB | 230 GB/s, 13.1 us |" "$T/page.md" &&
   grep -q "^| A100-SXM-80GB | calibration table h200, launch 1.1 us" "$T/page.md"; then
	ok "calibration used"
else bad "calibration: $(grep -A8 '^## Calibration' "$T/page.md")"; fi
if [ "$(grep -c '^| [0-9]* | [0-9.]* | [0-9.]* | [-+][0-9.]* % |$' "$T/page.md")" = 20 ] &&
   grep -q "From 64 MiB: worst absolute error 10.3 % over 9 sizes" "$T/page.md" &&
   grep -q "^| nccl_h100_8gpu_ring_busbw | .* | 370.0 | 369.7 | -0.1 % |" "$T/page.md"; then
	ok "collectives"
else bad "collectives: $(grep -A3 '^### ' "$T/page.md")"; fi

# A log with in-place times only (tools/measure_allreduce.py): those times,
# and the page says so; 266.09 GB/s measured at 64 MiB is 2 x 64 MiB / 2 /
# 252.2 us.
D2=$T/inplace
mkdir -p "$D2/nccl"
cp "$V/nccl/h200-2gpu-all_reduce_perf.txt" "$D2/nccl/"
cp "$V/zero_mem_7p5b_nd64_stage0.yaml" "$D2/"
{ head -1 "$V/cases.csv"; grep '^zero_mem_7p5b_nd64_stage0,' "$V/cases.csv"; } >"$D2/cases.csv"
{ head -1 "$V/collectives.csv"; grep '^h200_2gpu_ar,' "$V/collectives.csv"; } >"$D2/collectives.csv"
if "$CS" validate --quick --dir "$D2" >"$T/page2.md" 2>"$T/err" &&
   grep -q "^all_reduce_perf on 2 GPUs of dgx-h200-nccl, algorithm ring, in-place times\. " "$T/page2.md" &&
   grep -q "^| 67108864 | 266.09 | [0-9.]* | [-+][0-9.]* % |$" "$T/page2.md" &&
   [ "$(grep -c '^| [0-9]* | [0-9.]* | [0-9.]* | [-+][0-9.]* % |$' "$T/page2.md")" = 13 ] &&
   ! grep -q "algorithm ring, in-place times" "$T/page.md"; then
	ok "in-place sweep"
else bad "in-place sweep: $(cat "$T/err"; grep -A8 '^### ' "$T/page2.md")"; fi
# A log with both columns: the out-of-place times win (the in-place ones
# here are twice as long, so they would halve the measured bandwidth).
awk '/^ *[0-9]/ { $10 = $6 * 2; $11 = "0.1"; $12 = "0.1"; $13 = 0 } { print }' \
	"$V/nccl/a100-all_reduce_perf.txt" >"$D2/nccl/both.txt"
{ head -1 "$V/collectives.csv"; grep '^nccl_a100_8gpu_ar,' "$V/collectives.csv" |
	sed 's|nccl/a100-all_reduce_perf.txt|nccl/both.txt|'; } >"$D2/collectives.csv"
if "$CS" validate --quick --dir "$D2" >"$T/page3.md" 2>"$T/err" &&
   grep -q "^| 67108864 | 171.55 | " "$T/page3.md" &&
   grep -q "^all_reduce_perf on 8 GPUs of dgx-a100-nccl, algorithm ring\. " "$T/page3.md"; then
	ok "out-of-place times win over in-place ones"
else bad "both columns: $(cat "$T/err"; grep -A12 '^### ' "$T/page3.md")"; fi

# The same page twice (determinism), written and checked.
"$CS" validate --quick --dir "$D" -o "$T/v.md" 2>/dev/null
if cmp -s "$T/page.md" "$T/v.md"; then ok "-o writes the printed page"
else bad "-o differs from stdout"; fi
if "$CS" validate --quick --dir "$D" --check "$T/v.md" >/dev/null 2>"$T/err"; then ok "--check passes"
else bad "--check: $(cat "$T/err")"; fi
sed '12s/.*/edited by hand/' "$T/v.md" >"$T/stale.md"
"$CS" validate --quick --dir "$D" --check "$T/stale.md" >/dev/null 2>"$T/err"
rc=$?
if [ "$rc" = 1 ] && grep -q "stale.md is stale: line 12 differs" "$T/err"; then ok "--check fails on a stale page"
else bad "stale page: exit $rc, $(cat "$T/err")"; fi

"$CS" validate --quick --dir "$D" --json >"$T/j" 2>/dev/null
if sqlite3 :memory: "select json_valid(readfile('$T/j'))" 2>/dev/null | grep -qx 1 &&
   grep -q '"id": "zero_mem_7p5b_nd64_stage0", "group": "zero_mem", "metric": "model_state_memory_per_gpu", "measured": 120, "predicted": 119.35' "$T/j"; then
	ok "json"
else bad "json: $(head -c 300 "$T/j")"; fi

# Bad input: exit 2 and a message naming the place.
expect_bad() {
	name=$1 want=$2; shift 2
	"$CS" validate --quick "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" = 2 ] && grep -q -- "$want" "$T/err"; then ok "$name"
	else bad "$name: exit $rc, $(cat "$T/err")"; fi
}
expect_bad "no such folder" "cannot open $T/none/cases.csv" --dir "$T/none"
cp -r "$D" "$T/b1" && sed -i '2s/achieved_tflops_per_gpu/tokens/' "$T/b1/cases.csv"
expect_bad "unknown metric" "cases.csv:2: column 'metric': expected" --dir "$T/b1"
cp -r "$D" "$T/b2" && sed -i '2s/,megatron_sc21,Narayanan/,flops6,Narayanan/' "$T/b2/cases.csv"
expect_bad "unknown formula" "cases.csv:2: column 'formula'" --dir "$T/b2"
cp -r "$D" "$T/b3" && sed -i '3s/,1.1,/,-1,/' "$T/b3/cases.csv"
expect_bad "negative measurement" "cases.csv:3: column 'value': expected a positive number" --dir "$T/b3"
cp -r "$D" "$T/b4" && rm "$T/b4/megatron_sc21_t1_1.7B.yaml"
expect_bad "missing scenario" "case megatron_sc21_t1_1.7B:" --dir "$T/b4"
cp -r "$D" "$T/b5" && sed -i '2s/,ring,/,tree,/' "$T/b5/collectives.csv"
expect_bad "unknown algorithm" "collectives.csv:2: column 'algo'" --dir "$T/b5"
cp -r "$D" "$T/b6" && sed -i '3s/,gpu,/,rack,/' "$T/b6/collectives.csv"
expect_bad "unknown per" "collectives.csv:3: column 'per'" --dir "$T/b6"
expect_bad "stray argument" "unexpected argument 'extra'" --dir "$D" extra
finish
