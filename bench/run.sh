#!/bin/sh
# bench/run.sh - build and run the engine benchmark, on one core, and print
# its table with the machine and the commit it ran on.
#
#   bench/run.sh [BUILD_DIR] [bench_engine arguments...]
#
# BUILD_DIR is the top build directory (where `configure` ran; default: the
# current directory; a first argument that is a mode or an option is taken
# as one for bench_engine). Extra arguments go to bench_engine (default: all).
# See docs/performance.md for what is measured.
set -eu

builddir=.
case ${1:-} in
'' | raw | allreduce | all | -*) ;;    # no build directory given
*) builddir=$1; shift ;;
esac
[ $# -gt 0 ] || set -- all

if [ ! -f "$builddir/Makefile" ]; then
	echo "run.sh: no Makefile in '$builddir': run configure there first," \
	     "or give the build directory as the first argument" >&2
	exit 2
fi

# Build (or bring up to date) the benchmark; it is an EXTRA_PROGRAMS target.
make -C "$builddir" bench/bench_engine >&2

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

echo "machine: $(uname -m), $(nproc) CPUs, $cpu"
echo "commit:  $commit"
echo "command: ${pin:+$pin }$bin $*"
echo
# shellcheck disable=SC2086 # $pin is empty or two words on purpose
exec $pin "$bin" "$@"
