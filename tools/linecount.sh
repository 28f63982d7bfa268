#!/bin/sh
# linecount.sh - the C lines (.c and .h) of each layer of clustersim and
# tools/'s share of them: the figure issue 21's acceptance bounds ("tools/
# holds at most a quarter of the C lines"). Only files git tracks count
# (git ls-files), so build trees and stray files never do. The layers are
# sim topology collectives parallel scenarios tools and any other top-level
# folder of tracked C files (a library folder); tests and benchmarks are
# not counted.
#   sh tools/linecount.sh [SRCDIR]
cd "${1:-$(dirname "$0")/..}" || exit 2
files=$(git ls-files -- '*.[ch]') || exit 2
total=0
tools=0
others=$(printf '%s\n' "$files" | sed -n 's|^\([^/]*\)/.*|\1|p' | sort -u |
	grep -vxE 'sim|topology|collectives|parallel|scenarios|tools|tests|bench')
for d in sim topology collectives parallel scenarios tools $others; do
	n=$(printf '%s\n' "$files" | grep "^$d/" | tr '\n' '\0' | xargs -0 -r cat | wc -l)
	[ "$n" -gt 0 ] || continue
	printf '%-12s %6d\n' "$d/" "$n"
	total=$((total + n))
	[ "$d" = tools ] && tools=$n
done
printf '%-12s %6d\n' total "$total"
awk -v t="$tools" -v n="$total" 'BEGIN { printf "tools/ share %5.1f %% (target: at most 25 %%)\n", 100 * t / n }'
