#!/bin/sh
# tools/fuzz.sh [SECONDS] [TARGET...] - build the libFuzzer targets of
# tests/fuzz/ with clang, AddressSanitizer and UndefinedBehaviorSanitizer in
# build-fuzz/, and run each for SECONDS (default 20) on a seed corpus:
#   scenario  the scenario loader (seeds: every scenario the project ships
#             and the bad-input catalogue)
#   nccl      the nccl-tests log reader and fit (seeds: scenarios/validation/nccl)
#   cli       the command-line option parser (seeds: command lines below)
#   valid     scenarios drawn from the valid space and simulated by `clustersim
#             run` in-process (tests/fuzz/fuzz_valid.c): exit 0, 2 or 3, never
#             1, a BUG, a deadlock or a non-finite figure (its input is a list
#             of decisions, not YAML; seeds: the shipped scenarios' bytes)
# A crash, leak, sanitizer report or timeout stops the run with a non-zero
# status and leaves the input as build-fuzz/crash-* (or timeout-*); for
# valid, the scenario it draws is printed too (FUZZ_PRINT=1
# build-fuzz/fuzz_valid FILE prints it). Needs clang and libFuzzer
# (tools/install-deps.sh installs them). Prints one line per target:
# executions, corpus size, seconds, crashes. docs/reliability.md has the
# figures of a long run.
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-20}
[ $# -gt 0 ] && shift
TARGETS=${*:-scenario nccl cli valid}
B=build-fuzz
FLAGS="-O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
LINK="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"

command -v clang >/dev/null 2>&1 || { echo "fuzz.sh: clang is not installed (tools/install-deps.sh)" >&2; exit 1; }
[ -f configure ] || autoreconf -fi
if [ ! -f "$B/Makefile" ]; then
	mkdir -p "$B"
	(cd "$B" && ../configure -q CC=clang CFLAGS="$FLAGS")
fi
make -s -C "$B" -j"$(nproc 2>/dev/null || echo 2)" clustersim
LIBS="$B/libclustersim.a $(pkg-config --libs gsl sqlite3 yaml-0.1) -lcsv -lm"
TOOLS=$(ls "$B"/tools/*.o | grep -v '/main\.o$')

# The command lines the cli target starts from: a command's index in
# `clustersim help` order, then its arguments separated by NUL bytes.
cli_seeds() {
	i=0
	for line in "scenarios/ddp-lesson.yaml --set parallel.tp=2 --db x.db --json" \
		"scenarios/ddp-lesson.yaml --vary parallel.zero=0,1 -j 2 --db s.db" \
		"scenarios/llama3-70b-h100x256.yaml --gpus 256 --top 5" \
		"--op allreduce --algo ring,rd --cluster dgx-h100 --nodes 2 -b 1MiB -e 1GiB -f 2 --chunk 512KiB --alpha 10us --bw 50GB/s" \
		"x.db --csv out.csv --run 1" "s.db --x parallel.tp --y step_time_s --svg p.svg" \
		"x.db --json" "" "calibrate" "nccl a.txt --fit-min 64MiB --base dgx-a100 -o p.yaml"; do
		printf '%b' "\\$(printf '%03o' "$i")" >"$1/seed$i"
		printf '%s' "$line" | tr ' ' '\000' >>"$1/seed$i"
		i=$((i + 1))
	done
}

status=0
for t in $TARGETS; do
	case $t in
	scenario) extra="" ;;
	nccl) extra="" ;;
	cli | valid) extra=$TOOLS ;;
	*) echo "fuzz.sh: unknown target '$t': expected scenario, nccl, cli or valid" >&2; exit 2 ;;
	esac
	# valid keeps run's report and messages in memory and prints its own;
	# its input is a few hundred bytes of decisions, all used from the start;
	# a simulation may take seconds on a loaded machine
	opts="-max_len=65536 -close_fd_mask=3 -timeout=10"
	[ "$t" = valid ] && opts="-max_len=1024 -len_control=0 -timeout=30"
	# shellcheck disable=SC2086 # word lists
	clang $FLAGS $LINK -I. -I"$B" "tests/fuzz/fuzz_$t.c" $extra $LIBS -o "$B/fuzz_$t"
	corpus="$B/corpus-$t"
	mkdir -p "$corpus"
	case $t in
	scenario) for f in scenarios/*.yaml scenarios/validation/*.yaml scenarios/clusters/*.yaml \
		scenarios/models/*.yaml tests/badinput/*.yaml; do
			cp "$f" "$corpus/$(echo "$f" | tr / _)"
		done ;;
	nccl) cp scenarios/validation/nccl/*.txt "$corpus/" ;;
	cli) cli_seeds "$corpus" ;;
	valid) for f in scenarios/*.yaml; do cp "$f" "$corpus/$(basename "$f")"; done ;;
	esac
	start=$(date +%s)
	# shellcheck disable=SC2086 # word lists
	if (cd "$B" && "./fuzz_$t" -max_total_time="$SECS" $opts \
		-rss_limit_mb=2048 -print_final_stats=1 "corpus-$t") \
		>"$B/fuzz_$t.log" 2>&1; then
		crashes=0
	else
		crashes=1
		status=1
		tail -n 40 "$B/fuzz_$t.log"
		art=$(ls -t "$B"/crash-* "$B"/timeout-* "$B"/oom-* 2>/dev/null | head -n 1)
		if [ "$t" = valid ] && [ -n "$art" ]; then
			echo "--- the scenario of $art:"
			(cd "$B" && FUZZ_PRINT=1 ./fuzz_valid -timeout=60 "${art#"$B"/}" 2>&1) | tail -n 120
		fi
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$B/fuzz_$t.log" | tail -1)
	echo "fuzz $t: ${execs:-?} executions, $(ls "$corpus" | wc -l) inputs in the corpus," \
		"$(( $(date +%s) - start )) s, crashes: $crashes"
done
exit $status
