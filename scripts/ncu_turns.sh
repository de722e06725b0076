#!/usr/bin/env bash
# On the GPU machine: ncu (clocks left free) of glukit_turns_probe's kernels in turns at
# the reference shape, one K at a time: every launch of rounds 25-34 of the probe's
# turns (WarpSpecializedTma with Y, its 128 x 128 form, bias-only, the ping-pong 128 x 128
# kernel with Y and bias-only, cuBLAS GEMM; 10 each),
# then a table of medians per kernel (scripts/ncu_summary.py). The metrics: time, elapsed
# cycles, SM clock, the tensor pipe's wgmma cycles, DRAM, L2 and the shared-memory banks
# and pipe, each only where this ncu knows it.
#
#   scripts/ncu_turns.sh PROBE_DIR [K ...]     # default K: 256 512 1024; logs in $OUT
#   NCU_SKIP=160 NCU_COUNT=60                  # the launches profiled (defaults for the probe's 6 kernels)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$1; shift
ks=${*:-256 512 1024}
out=${OUT:-$PWD/ncu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
wanted="gpu__time_duration.sum gpc__cycles_elapsed.max sm__cycles_active.avg sm__cycles_elapsed.avg.per_second
sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_elapsed
dram__throughput.avg.pct_of_peak_sustained_elapsed lts__t_sectors.avg.pct_of_peak_sustained_elapsed
l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed
l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed"
known=$(ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}')
metrics=""
for m in $wanted; do
  if grep -qx "${m%%.*}" <<< "$known"; then metrics+="${metrics:+,}$m"; else echo "ncu_turns.sh: no ${m%%.*} on this ncu"; fi
done
status=0
# Launches before the turns: 12 fills, the 4 launches of the two output comparisons; each
# round of the turns is 6 launches, so rounds 25-34 start at launch 16 + 6 x 24.
for k in $ks; do
  ncu --clock-control none --launch-skip "${NCU_SKIP:-160}" --launch-count "${NCU_COUNT:-60}" --csv --page raw --metrics "$metrics" \
    --log-file "$out/ncu-turns-k$k.csv" "$dir/glukit_turns_probe" "$k" > "$out/ncu-turns-k$k.log" 2>&1 || status=1
done
python3 "$root/scripts/ncu_summary.py" "$out"/ncu-turns-k*.csv | tee "$out/ncu-turns-summary.txt" || status=1
exit $status
