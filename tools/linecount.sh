#!/bin/sh
# linecount.sh - the C lines (.c and .h) of each layer of clustersim and
# tools/'s share of them: the figure issue 21's acceptance bounds ("tools/
# holds at most a quarter of the C lines"). Tests and benchmarks are not
# counted. Any other top-level folder holding C files counts as a layer.
#   sh tools/linecount.sh [SRCDIR]
cd "${1:-$(dirname "$0")/..}" || exit 2
total=0
tools=0
for d in sim topology collectives parallel scenarios tools $(ls -d */ 2>/dev/null | tr -d / |
	grep -vxE 'sim|topology|collectives|parallel|scenarios|tools|tests|bench|docs|m4|autom4te.cache'); do
	[ -d "$d" ] || continue
	n=$(find "$d" -name '*.[ch]' -type f -exec cat {} + 2>/dev/null | wc -l)
	[ "$n" -gt 0 ] || continue
	printf '%-12s %6d\n' "$d/" "$n"
	total=$((total + n))
	[ "$d" = tools ] && tools=$n
done
printf '%-12s %6d\n' total "$total"
awk -v t="$tools" -v n="$total" 'BEGIN { printf "tools/ share %5.1f %% (target: at most 25 %%)\n", 100 * t / n }'
