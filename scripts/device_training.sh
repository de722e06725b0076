#!/usr/bin/env bash
# On the GPU machine, from a build made by scripts/build_device.sh (carried as BUILD_DIR) and
# the repository root: the training path's checks and timings in one call.
#   1. builds the PyTorch extension in place (python/setup.py, in the background), while
#   2. glukit_gpu_tests on the training tags runs, then the four sanitizers on their
#      [sanitize] cases, and examples 06 and 07;
#   3. glukit_bench's training rows (GLUKIT_BENCH_FILTER), alone on the GPU;
#   4. pytest python/tests/test_training_gpu.py;
#   5. python/bench.py --parts training (the MLP step against eager and torch.compile);
#   6. python/probes/profile_mlp_step.py (the step's kernels, eager and glukit);
#   7. the rest of the GPU list (GLUKIT_REST_OF_LIST=0 skips it).
# GLUKIT_TRAINING_PARTS (default kernels,torch,profile) picks the parts: kernels = 2, 3 (with
# GLUKIT_GPU_FILTER, default the three training tags); torch = 1, 4, 5; profile = 6.
# Writes under $OUT: gpu_training.txt (with the sanitizers' summaries), examples.txt,
# ext_build.log, bench_gated_backward.json/.txt, pytest_training.log, bench_training.json,
# bench_training.log, profile_step.txt, gpu_rest.txt. Each step has a
# time limit so that the logs come back within one device call.
#   scripts/device_training.sh [BUILD_DIR]      # default .carry/build
set -uo pipefail
build=${1:-.carry/build}
: "${OUT:?set OUT to the output directory}"
export LD_LIBRARY_PATH="$PWD/$build/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tests=$build/test/gpu/glukit_gpu_tests
parts=${GLUKIT_TRAINING_PARTS:-kernels,torch,profile}
gpu_filter=${GLUKIT_GPU_FILTER:-[gated_backward],[gated_projection_backward],[addmm_glu_backward]}
has() { [[ ",$parts," == *",$1,"* ]]; }
filter=${GLUKIT_BENCH_FILTER:-'^gated_(projection_)?backward.*/(4096|8192|16384)/14336/4096/|^gated_(projection_)?backward.*/4096/28672/8192/'}
start=$(date +%s)
step() { echo "==> [$(( $(date +%s) - start ))s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader

if [ "${GLUKIT_SASS:-1}" = 1 ]; then  # GLUKIT_SASS=0 skips it (about 50 s)
step "SASS of the training kernels (sass_summary.sh)"
bash scripts/sass_summary.sh "$tests" 'GatedBackwardProblem|GatedProjectionBackwardProblem|AddmmGluBackwardProblem|GatedProblem<[^>]*, true>' 2>&1 | sort -u | head -24 |
  sed -E 's/^void glukit::sm90::addmm_glu_kernel<glukit::Bound<//; s/>\(glukit::sm90::KernelParamsT.*\) / /' | cut -c1-260
fi

if has torch; then
  step "extension build (background)"
  (cd python && rm -rf build glukit/_C*.so && TORCH_CUDA_ARCH_LIST=9.0a MAX_JOBS=16 \
     timeout 300 python3 setup.py build_ext --inplace > "$OUT/ext_build.log" 2>&1; echo "rc=$?" >> "$OUT/ext_build.log") &
  build_pid=$!
fi

if has kernels; then
step "glukit_gpu_tests $gpu_filter"
timeout 240 "$tests" "$gpu_filter" > "$OUT/gpu_training.txt" 2>&1
grep -E "All tests passed|test cases:" "$OUT/gpu_training.txt" | tail -1
grep -B3 -A20 "FAILED" "$OUT/gpu_training.txt" | head -60
san_filter=${GLUKIT_SAN_FILTER:-[gated_projection_backward][sanitize]}
step "the four sanitizers on $san_filter"
san_pids=()
for tool in memcheck racecheck synccheck initcheck; do
  (timeout 240 compute-sanitizer --tool $tool --error-exitcode 1 "$tests" "$san_filter" 2>&1 | tail -4 |
     sed "s/^/$tool: /" >> "$OUT/gpu_training.txt") &
  san_pids+=($!)
done
wait "${san_pids[@]}"
grep -E "^(memcheck|racecheck|synccheck|initcheck):" "$OUT/gpu_training.txt"
step "examples 06 and 07"
for ex in examples/06_training_gated_mlp/glukit_example_training_gated_mlp \
          examples/07_training_addmm_glu/glukit_example_training_addmm_glu; do
  echo "== $ex" >> "$OUT/examples.txt"
  timeout 60 "$build/$ex" >> "$OUT/examples.txt" 2>&1; echo "rc=$?" >> "$OUT/examples.txt"
done
cat "$OUT/examples.txt"

step "glukit_bench $filter"
timeout "${GLUKIT_BENCH_TIMEOUT:-240}" "$build/benchmark/glukit_bench" --benchmark_filter="$filter" \
  --benchmark_out="$OUT/bench_gated_backward.json" --benchmark_out_format=json 2>&1 | tee "$OUT/bench_gated_backward.txt" | cut -c1-220 | tail -60
fi

if has torch; then
step "waiting for the extension build"
wait $build_pid
tail -2 "$OUT/ext_build.log"

step "pytest test_training_gpu.py"
(cd python && timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_training_gpu.py > "$OUT/pytest_training.log" 2>&1)
tail -5 "$OUT/pytest_training.log"

step "bench.py --parts training"
(cd python && PYTHONUNBUFFERED=1 timeout 240 python3 bench.py "$OUT/bench_training.json" --parts training > "$OUT/bench_training.log" 2>&1)
tail -30 "$OUT/bench_training.log"
fi
if has profile; then
step "probes/profile_mlp_step.py"
(cd python && timeout 120 python3 probes/profile_mlp_step.py 4096 4096 14336 > "$OUT/profile_step.txt" 2>&1)
cat "$OUT/profile_step.txt"
fi
if [ "${GLUKIT_REST_OF_LIST:-1}" = 1 ]; then
  step "glukit_gpu_tests without the training tags (the rest of the GPU list)"
  timeout "${GLUKIT_REST_TIMEOUT:-300}" "$tests" "~[gated_backward]~[gated_projection_backward]~[addmm_glu_backward]" \
    > "$OUT/gpu_rest.txt" 2>&1
  echo "rest of the list: rc=$? $(grep -E 'All tests passed|test cases:' "$OUT/gpu_rest.txt" | tail -1)"
  grep -B3 -A12 "FAILED" "$OUT/gpu_rest.txt" | head -40
fi
step "done"
