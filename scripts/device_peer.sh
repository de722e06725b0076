#!/usr/bin/env bash
# On the GPU machine: the CUTLASS peer (CUTLASS 4.7.0 EVT, commit 7107b05: its `ref` and `llm`
# sets) and glukit_bench's rows of the same problems (the reference shape's shipped kernels and
# cuBLAS; the LLM shapes' default and cuBLAS), in turns for ROUNDS rounds, then the table of
# scripts/peer_compare.py.
#
#   scripts/device_peer.sh BENCH_DIR PEER_BINARY [ROUNDS]   # BENCH_DIR holds glukit_bench
#
# The peer binary is built outside the repository for sm_90a with static cudart (its source
# and build script travel with it); copy it into a carried, git-ignored folder.
# Writes $OUT/peer-<round>.txt, $OUT/glukit-<round>.json and $OUT/peer.txt (or ./peer-out/).
set -uo pipefail
bench=$1 peer=$2 rounds=${3:-2}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$PWD/peer-out}
mkdir -p "$out"
filter='^(WarpSpecializedTma|WarpSpecializedTma128x128|WarpSpecializedTmaPingpong128x128|WarpSpecializedTmaPingpong64x128|cublas_gemm)/(256|512|1024)/iter'
filter+='|^(default|cublas_gemm)/bf16/nk/(256|2048|8192)/(14336/4096|28672/8192|11008/4096)/iter'
status=0
for r in $(seq 1 "$rounds"); do
  echo "== round $r: $(nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader)"
  { "$peer" ref && "$peer" llm; } > "$out/peer-$r.txt" 2>&1 || { status=1; grep -E "FAIL|error" "$out/peer-$r.txt" | head; }
  LD_LIBRARY_PATH="$bench:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bench/glukit_bench" \
    --benchmark_filter="$filter" --benchmark_out="$out/glukit-$r.json" --benchmark_out_format=json \
    > "$out/glukit-$r.log" 2>&1 || { status=1; tail -5 "$out/glukit-$r.log"; }
done
python3 "$root/scripts/peer_compare.py" "$out" | tee "$out/peer.txt"
exit $status
