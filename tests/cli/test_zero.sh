#!/bin/sh
# test_zero.sh - scenarios/zero-fsdp-compare.yaml under DDP, ZeRO-1/2/3 and
# FSDP variants: the orderings of step time and peak memory that the
# mechanisms imply (SPEC C12, C19); Megatron's overlapped parameter gather
# (the same bytes, gathered during the forward, never slower) and fp32
# gradients (twice the gradient bytes and memory). Prints "N passed, N
# failed".
. "${SRCDIR:-.}/tests/cli/lib.sh"
SC="$SRC/scenarios/zero-fsdp-compare.yaml"

# field FILE KEY: a number from the report's JSON (top level or memory/breakdown).
field() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
run() {
	name=$1; shift
	if "$CS" run "$SC" "$@" --json > "$T/$name.json" 2> "$T/$name.err"; then :
	else bad "run $name: $(cat "$T/$name.err")"; fi
}
# less A B: A < B as numbers.
less() { awk "BEGIN { exit !($1 < $2) }"; }
check_less() {
	if less "$2" "$3"; then ok "$1 ($2 < $3)"; else bad "$1: $2 is not below $3"; fi
}

run ddp
run zero1 --set parallel.zero=1
run zero2 --set parallel.zero=2
run zero3 --set parallel.zero=3
run fsdp --set parallel.fsdp.enabled=true
run noprefetch --set parallel.fsdp.enabled=true --set parallel.fsdp.prefetch=false
run noreshard --set parallel.fsdp.enabled=true --set parallel.fsdp.reshard=false
run hsdp --set parallel.fsdp.enabled=true --set parallel.fsdp.hsdp=true
run offload --set parallel.zero=2 --set parallel.offload.enabled=true

for f in ddp zero1 zero2 zero3 fsdp noprefetch noreshard hsdp offload; do
	grep -q '"fits":true' "$T/$f.json" && ok "$f fits" || bad "$f does not fit"
done

# Peak memory: each stage shards more.
check_less "peak memory ZeRO-1 < DDP" "$(field "$T/zero1.json" peak)" "$(field "$T/ddp.json" peak)"
check_less "peak memory ZeRO-2 < ZeRO-1" "$(field "$T/zero2.json" peak)" "$(field "$T/zero1.json" peak)"
check_less "peak memory ZeRO-3 < ZeRO-2" "$(field "$T/zero3.json" peak)" "$(field "$T/zero2.json" peak)"
check_less "model states ZeRO-3 < ZeRO-2" "$(field "$T/zero3.json" model_states)" "$(field "$T/zero2.json" model_states)"
# FSDP: prefetch off is slower; reshard off uses more memory.
check_less "FSDP with prefetch is faster" "$(field "$T/fsdp.json" step_time_s)" "$(field "$T/noprefetch.json" step_time_s)"
check_less "FSDP exposed communication grows without prefetch" \
	"$(field "$T/fsdp.json" exposed_comm_s)" "$(field "$T/noprefetch.json" exposed_comm_s)"
check_less "FSDP reshard off uses more memory" "$(field "$T/fsdp.json" peak)" "$(field "$T/noreshard.json" peak)"
# Reshard off skips the backward all-gathers: fewer events.
check_less "FSDP reshard off has fewer events (no backward all-gathers)" \
	"$(field "$T/noreshard.json" events)" "$(field "$T/fsdp.json" events)"
# HSDP holds twice the states of full sharding over two nodes.
check_less "HSDP holds more model states than full sharding" \
	"$(field "$T/fsdp.json" model_states)" "$(field "$T/hsdp.json" model_states)"
# Offload: no optimizer states on the GPU, and it costs time on this machine.
[ "$(field "$T/offload.json" optimizer)" = 0 ] && ok "offload: optimizer states off the GPU" ||
	bad "offload: optimizer $(field "$T/offload.json" optimizer) B on the GPU"
check_less "offload costs time here" "$(field "$T/zero2.json" step_time_s)" "$(field "$T/offload.json" step_time_s)"
"$CS" run "$SC" --set parallel.offload.enabled=true > /dev/null 2> "$T/e"
[ $? = 2 ] && grep -q "zero 1 or 2" "$T/e" && ok "offload without ZeRO-1/2 is refused" ||
	bad "offload with DDP: $(cat "$T/e")"

# ZeRO-3's parameter all-gathers (param stream) and gradient reduce-scatters
# (grad stream) run at once; sharing one group, they were once matched in an
# order that depended on timing ("joined collective #240 of its group as
# 'zero3.unit0.mb0.reducescatter' but another member joined it as ... allgather")
# on Llama-3-70B with CP 2 over 8 nodes.
"$CS" run "$SRC/scenarios/llama3-70b-h100x512.yaml" --set cluster.nodes=8 --set parallel.pp=1 \
	--set parallel.cp=2 --set parallel.dp=4 --set parallel.zero=3 --set training.micro_batch=1 \
	--set training.global_batch=8 --set sim.fidelity=analytic > "$T/o" 2> "$T/e" &&
	grep -q "step time" "$T/o" && ok "ZeRO-3 gathers and reduce-scatters at once (CP 2, 8 nodes)" ||
	bad "ZeRO-3 with CP 2 on 8 nodes: $(cat "$T/e")"

# ddp.overlap_param_gather: ZeRO-1's parameter all-gathers move the same
# bytes (SPEC C18), but start at the step's beginning instead of after the
# optimizer step, and the step is no slower.
for v in false true; do
	rm -f "$T/opg-$v.db"
	"$CS" run "$SC" --set parallel.zero=1 --set parallel.ddp.overlap_param_gather=$v \
		--db "$T/opg-$v.db" --json >"$T/opg-$v.json" 2>"$T/e" || bad "overlap_param_gather=$v: $(cat "$T/e")"
done
q() { sqlite3 "$1" "$2"; }
b0=$(q "$T/opg-false.db" "select sum(bytes) from ops where rank=0 and name like 'zero1.params%'")
b1=$(q "$T/opg-true.db" "select sum(bytes) from ops where rank=0 and name like 'zero1.params%'")
if [ -n "$b0" ] && awk "BEGIN { exit !(($b0 - $b1) ^ 2 < 1e6) }"; then
	ok "overlapped parameter gathers move the same bytes ($b0)"
else bad "parameter gather bytes: $b0 vs $b1"; fi
s0=$(q "$T/opg-false.db" "select min(start_ps) >= (select max(end_ps) from ops where rank=0 and name like 'optimizer.step%') from ops where rank=0 and name like 'zero1.params%'")
s1=$(q "$T/opg-true.db" "select min(start_ps) from ops where rank=0 and name like 'zero1.params%'")
f1=$(q "$T/opg-true.db" "select min(start_ps) >= (select min(end_ps) from ops where rank=0 and name like 'zero1.params0.%') from ops where rank=0 and name like 'L0.mb0.fwd.%'")
if [ "$s0" = 1 ] && [ "$s1" = 0 ] && [ "$f1" = 1 ]; then
	ok "gathers after the step without, at the start with; layer 0 waits for its bucket"
else bad "gather placement: after-step $s0, start $s1, layer 0 waits $f1"; fi
t0=$(field "$T/opg-false.json" step_time_s); t1=$(field "$T/opg-true.json" step_time_s)
check_less "overlapped parameter gather is faster" "$t1" "$t0"

# ddp.fp32_grads: 4-byte gradients: twice the reduce-scatter bytes and the
# gradient memory.
run fp32g --set parallel.zero=1 --set parallel.ddp.fp32_grads=true
g0=$(field "$T/zero1.json" grads); g1=$(field "$T/fp32g.json" grads)
if awk "BEGIN { exit !($g1 == 2 * $g0) }"; then ok "fp32 gradients: twice the memory ($g1)"
else bad "fp32 gradient memory: $g1 vs 2 x $g0"; fi
rm -f "$T/g.db"
"$CS" run "$SC" --set parallel.zero=1 --set parallel.ddp.fp32_grads=true --db "$T/g.db" >/dev/null 2>&1
r1=$(q "$T/g.db" "select sum(bytes) from ops where rank=0 and name like 'zero1.bucket%'")
r0=$(q "$T/opg-false.db" "select sum(bytes) from ops where rank=0 and name like 'zero1.bucket%'")
if [ -n "$r0" ] && awk "BEGIN { exit !($r1 == 2 * $r0) }"; then ok "fp32 gradients: twice the reduce-scatter bytes"
else bad "fp32 reduce-scatter bytes: $r1 vs 2 x $r0"; fi

# report names the strategy run named, parallel.strategy included.
rm -f "$T/da.db"
"$CS" run "$SC" --set parallel.strategy=ddp-after --fidelity analytic --db "$T/da.db" >/dev/null 2>&1
rs=$("$CS" report "$T/da.db" --json 2>/dev/null | sed -n 's/.*"strategy":"\([^"]*\)".*/\1/p')
if [ "$rs" = ddp-after ]; then ok "report names parallel.strategy's ddp-after"
else bad "report's strategy for a ddp-after run: '$rs'"; fi

finish
