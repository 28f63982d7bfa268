#!/bin/sh
# bench/run.sh - build and run the benchmarks, on one core, and print their
# tables with the machine and the commit they ran on.
#
#   bench/run.sh [BUILD_DIR] [plan | store | scale [--quick] | bench_engine arguments...]
#
# BUILD_DIR is the top build directory (where `configure` ran; default: the
# current directory; a first argument that is a mode or an option is taken
# as one for bench_engine). `plan` runs only the planner's screening
# benchmark (bench_plan), `store` the SQLite writer's (bench_store, in a
# temporary directory), `scale` the scale table (bench/scale.sh with the
# build's clustersim, unpinned: it is one process per case); other arguments
# go to bench_engine; with none, bench_engine all and bench_plan run.
# See docs/performance.md for what is measured.
set -eu

builddir=.
case ${1:-} in
'' | raw | allreduce | all | plan | store | scale | -*) ;;    # no build directory given
*) builddir=$1; shift ;;
esac
both=
[ $# -gt 0 ] || { set -- all; both=1; }

if [ ! -f "$builddir/Makefile" ]; then
	echo "run.sh: no Makefile in '$builddir': run configure there first," \
	     "or give the build directory as the first argument" >&2
	exit 2
fi

# Build (or bring up to date) the benchmarks; they are EXTRA_PROGRAMS targets.
make -C "$builddir" bench/bench_engine bench/bench_plan bench/bench_store clustersim >&2

bin=$builddir/bench/bench_engine
srcdir=$(cd "$(dirname "$0")/.." && pwd)

cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
[ -n "$cpu" ] || cpu=unknown
commit=$(git -C "$srcdir" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git -C "$srcdir" status --porcelain 2>/dev/null)" ]; then
	commit="$commit (with uncommitted changes)"
fi

pin=
if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
	pin="taskset -c 0"
fi

if [ "$1" = scale ]; then
	shift
	exec sh "$srcdir/bench/scale.sh" "$(cd "$builddir" && pwd)/clustersim" "$@"
fi
echo "machine: $(uname -m), $(nproc) CPUs, $cpu"
echo "commit:  $commit"
if [ "$1" = store ]; then
	tmpdir=$(mktemp -d)
	trap 'rm -rf "$tmpdir"' EXIT INT TERM
	echo "command: ${pin:+$pin }$builddir/bench/bench_store --db $tmpdir/bench_store.db"
	echo
	# shellcheck disable=SC2086 # $pin is empty or two words on purpose
	$pin "$builddir/bench/bench_store" --db "$tmpdir/bench_store.db"
	exit
fi
if [ "$1" = plan ]; then
	echo "command: ${pin:+$pin }$builddir/bench/bench_plan"
	echo
	# shellcheck disable=SC2086 # $pin is empty or two words on purpose
	exec $pin "$builddir/bench/bench_plan"
fi
echo "command: ${pin:+$pin }$bin $*"
echo
# shellcheck disable=SC2086 # $pin is empty or two words on purpose
$pin "$bin" "$@"
if [ -n "$both" ]; then
	echo
	echo "command: ${pin:+$pin }$builddir/bench/bench_plan"
	echo
	# shellcheck disable=SC2086
	$pin "$builddir/bench/bench_plan"
fi
