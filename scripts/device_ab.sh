#!/usr/bin/env bash
# On the GPU machine: an A/B of two builds' probes (benchmark/probes), each build's
# glukit_turns_probe at the reference shapes and at the LLM shapes (`llm`), the two
# builds alternating for ROUNDS rounds, then each build's glukit_paired_probe once.
# Every line goes to $OUT/ab.txt (or ./ab-out/ab.txt) and to the console; exits non-zero
# when a probe failed (its output check or a launch).
#
#   scripts/device_ab.sh OLD_DIR NEW_DIR [ROUNDS]   # folders holding the probe binaries
set -uo pipefail
old=$1 new=$2 rounds=${3:-2}
out=${OUT:-$PWD/ab-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
dir_of() { if [ "$1" = new ]; then echo "$new"; else echo "$old"; fi; }
# A brace group redirected to a file runs in this shell, so `status` survives it.
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
  for r in $(seq 1 "$rounds"); do
    for b in old new; do
      echo "== $b round $r"
      "$(dir_of $b)/glukit_turns_probe" || status=1
      "$(dir_of $b)/glukit_turns_probe" llm || status=1
    done
  done
  for b in old new; do
    if [ -x "$(dir_of $b)/glukit_paired_probe" ]; then
      echo "== $b paired"
      "$(dir_of $b)/glukit_paired_probe" || status=1
    fi
  done
} > "$out/ab.txt" 2>&1
cat "$out/ab.txt"
exit $status
