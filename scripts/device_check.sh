#!/usr/bin/env bash
# On the GPU machine, from a build made by scripts/build_device.sh: the whole GPU
# test list, and at the same time the four compute-sanitizer tools (each its own
# process) on its [sanitize] and [cluster] subsets. Logs go to $OUT (or
# ./check-out); prints each step's summary line; exits non-zero if any step
# failed. The fuzz case runs a second time in a process of its own (GLUKIT_FUZZ_OWN problems,
# default 300). On the
# H200 (16 cores) the whole check takes 7-8 minutes: the list that
# long (its fp64 host references use every core; the 10000-problem fuzz case comes last),
# the sanitizers 4-5 alongside. A time limit under 8 minutes cuts the fuzz case short.
# The two environment variables below split it over several calls of the device tool.
#
#   scripts/device_check.sh [BUILD_DIR]          # default .carry/build
#   GLUKIT_GPU_TEST_SPEC='~[cluster]' ...        # a Catch2 test spec for the whole-list run;
#                                                # "none" skips the list
#   GLUKIT_SANITIZERS='initcheck' ...            # which tools run (default: all four; "none")
#   GLUKIT_SANITIZE_SPEC='[moe][sanitize]' ...   # the sanitizers' test spec (default
#                                                # "[sanitize],[cluster]")
set -uo pipefail
build=${1:-.carry/build}
out=${OUT:-$PWD/check-out}
mkdir -p "$out"
tests=$(find "$build" -name glukit_gpu_tests -type f -perm -u+x | head -n 1)
[ -n "$tests" ] || { echo "device_check.sh: glukit_gpu_tests not found under $build" >&2; exit 1; }
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
spec=${GLUKIT_GPU_TEST_SPEC:-}
tools=${GLUKIT_SANITIZERS:-memcheck racecheck synccheck initcheck}
status=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
log_summary() {  # the last summary line of a log
  grep -E 'All tests passed|test cases:|ERROR SUMMARY|RACECHECK SUMMARY' "$1" | tail -1
}
pids=()
if [ "$spec" != none ]; then
  "$tests" ${spec:+"$spec"} > "$out/gpu_tests.txt" 2>&1 &
  pids+=($!)
  # the fuzz case again in a process of its own (test/gpu/CMakeLists.txt)
  GLUKIT_FUZZ_PROBLEMS=${GLUKIT_FUZZ_OWN:-300} "$tests" "[fuzz]" > "$out/fuzz_own_process.txt" 2>&1 &
  pids+=($!)
fi
[ "$tools" = none ] && tools=""
for tool in $tools; do
  compute-sanitizer --tool "$tool" --error-exitcode 1 "$tests" "${GLUKIT_SANITIZE_SPEC:-[sanitize],[cluster]}" \
    > "$out/sanitizer_$tool.txt" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
if [ "$spec" != none ]; then
  echo "gpu tests: $(log_summary "$out/gpu_tests.txt")"
  echo "fuzz, own process: $(log_summary "$out/fuzz_own_process.txt")"
fi
for tool in $tools; do
  echo "$tool: $(log_summary "$out/sanitizer_$tool.txt")"
done
exit $status
