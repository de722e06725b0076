#!/usr/bin/env bash
# Runs glukit_bench on the GPU machine from a build made by
# scripts/build_device.sh, writes its JSON and console log to $OUT, and prints
# a compact table (scripts/render_results.py; also a PNG where matplotlib is).
#
#   scripts/device_bench.sh [BUILD_DIR] [NAME] [-- extra glukit_bench flags]
#
#   BUILD_DIR  default .carry/build
#   NAME       results' base name, default h200-<UTC date>  ($OUT/NAME.json, .txt, .md, .png)
#   OUT        output folder (the device machine sets it), default ./bench-out
#   GLUKIT_RUN_EXAMPLES=1  also run the GPU examples 01-09 (logs in $OUT/examples.txt)
#   GLUKIT_CLOCK_LOG=1     also sample the card's SM clock, power and temperature every
#                          100 ms ($OUT/NAME-clocks.csv) and stamp each console line with
#                          the time it was printed ($OUT/NAME-stamped.txt), so a row can be
#                          matched to the clock state it ran in
#
# Exits with glukit_bench's status (non-zero when a benchmark failed its check),
# or non-zero when an example failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=.carry/build
name=h200-$(date -u +%Y-%m-%d)
if [ $# -gt 0 ] && [ "$1" != "--" ]; then build=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then name=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
out=${OUT:-$PWD/bench-out}
mkdir -p "$out"
build=$(cd "$build" 2>/dev/null && pwd) || { echo "device_bench.sh: no build folder '$build'" >&2; exit 1; }

bench=$(find "$build" -name glukit_bench -type f -perm -u+x | head -n 1)
[ -n "$bench" ] || { echo "device_bench.sh: glukit_bench not found under $build (run scripts/build_device.sh)" >&2; exit 1; }

# Libraries: the carried libbenchmark first, then the CUDA toolkit's cuBLAS;
# where the toolkit has none, the cuBLAS of the nvidia-cublas Python wheel.
export LD_LIBRARY_PATH="$build/lib:$(dirname "$bench"):/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ldd "$bench" | grep -q 'libcublas.*not found'; then
  wheel_lib=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)
  [ -n "$wheel_lib" ] && export LD_LIBRARY_PATH="$wheel_lib:$LD_LIBRARY_PATH"
fi
if ldd "$bench" | grep 'not found'; then
  echo "device_bench.sh: glukit_bench is missing the libraries above" >&2
  exit 1
fi

rev=unknown
[ -f "$build/GIT_REV" ] && rev=$(cat "$build/GIT_REV")
echo "glukit_bench: $bench (commit $rev)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv 2>/dev/null || true

smi_pid=
if [ "${GLUKIT_CLOCK_LOG:-0}" = 1 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 100 > "$out/$name-clocks.csv" 2>&1 &
  smi_pid=$!
fi
stamp() {  # each line with the UTC time it arrived (the JSON and .txt stay unstamped)
  if [ "${GLUKIT_CLOCK_LOG:-0}" = 1 ]; then
    while IFS= read -r line; do printf '%s %s\n' "$(date -u +%H:%M:%S.%3N)" "$line"; done > "$out/$name-stamped.txt"
  else
    cat > /dev/null
  fi
}
"$bench" --benchmark_format=console \
  --benchmark_out="$out/$name.json" --benchmark_out_format=json \
  --benchmark_context=git_commit="$rev" "$@" 2>&1 | tee "$out/$name.txt" >(stamp)
status=${PIPESTATUS[0]}
[ -n "$smi_pid" ] && kill "$smi_pid" 2>/dev/null

if [ -s "$out/$name.json" ]; then
  render=(python3 "$root/scripts/render_results.py" "$out/$name.json" --md "$out/$name.md")
  if python3 -c 'import matplotlib' 2>/dev/null; then render+=(--png "$out/$name.png"); fi
  echo
  "${render[@]}" || echo "device_bench.sh: render_results.py failed" >&2
fi

if [ "${GLUKIT_RUN_EXAMPLES:-0}" = 1 ]; then
  : > "$out/examples.txt"
  for ex in glukit_example_reference_shape glukit_example_blocks glukit_example_custom_epilogue \
            glukit_example_linear_layer_bf16 glukit_example_llama_mlp_gated glukit_example_training_gated_mlp \
            glukit_example_training_addmm_glu glukit_example_fp8_mlp glukit_example_moe_experts; do
    exe=$(find "$build" -name "$ex" -type f -perm -u+x | head -n 1)
    if [ -z "$exe" ]; then echo "device_bench.sh: $ex not built" | tee -a "$out/examples.txt"; status=1; continue; fi
    echo "== $ex" | tee -a "$out/examples.txt"
    "$exe" 2>&1 | tee -a "$out/examples.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
fi

echo "device_bench.sh: results in $out (exit status $status)"
exit "$status"
