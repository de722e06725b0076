#!/usr/bin/env bash
# On the GPU machine: an A/B of two builds' glukit_bench, the builds alternating for
# ROUNDS rounds (old, new, old, new, ...) on the rows FILTER selects, then a table of
# each row's time in both builds (median over the rounds of each row's median) and the
# ratio new / old (scripts/bench_ab.py). The two builds cannot share a process, so the
# alternation is what evens out the card's clock state between them.
#
#   scripts/device_bench_ab.sh OLD_DIR NEW_DIR FILTER [ROUNDS]   # folders holding glukit_bench
#   scripts/device_bench_ab.sh OLD_DIR NEW_DIR @scripts/ab_shipped.filter 3
#
# FILTER: a --benchmark_filter regex, or @FILE holding one (scripts/ab_shipped.filter: every
# shipped sm90a kernel at the shapes it runs, the A/B a change to the kernels owes; a file
# in the tree travels with every device call, a file in a carried folder only when carried).
#
# Writes $OUT/ab-<build>-<round>.json, $OUT/ab.txt (or ./ab-out/); exits non-zero when a
# run failed (a benchmark's output check, a launch).
set -uo pipefail
old=$1 new=$2 filter=$3 rounds=${4:-2}
if [ "${filter:0:1}" = @ ]; then
  [ -f "${filter:1}" ] || { echo "device_bench_ab.sh: no filter file ${filter:1}" >&2; exit 2; }
  filter=$(tr -d '\n' < "${filter:1}")
fi
# An empty filter would run the whole benchmark (tens of minutes) in every round.
[ -n "$filter" ] || { echo "device_bench_ab.sh: FILTER is empty (a filter file not carried?)" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$PWD/ab-out}
mkdir -p "$out"
status=0
for r in $(seq 1 "$rounds"); do
  for b in old new; do
    dir=$old
    [ "$b" = new ] && dir=$new
    echo "== $b round $r: $(nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader)"
    LD_LIBRARY_PATH="$dir:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$dir/glukit_bench" \
      --benchmark_filter="$filter" --benchmark_out="$out/ab-$b-$r.json" --benchmark_out_format=json \
      > "$out/ab-$b-$r.log" 2>&1 || { status=1; tail -5 "$out/ab-$b-$r.log"; }
  done
done
python3 "$root/scripts/bench_ab.py" "$out" | tee "$out/ab.txt"
exit $status
