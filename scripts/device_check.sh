#!/usr/bin/env bash
# On the GPU machine, from a build made by scripts/build_device.sh: the whole GPU
# test list, then the four compute-sanitizer tools on its [sanitize] subset.
# Logs go to $OUT (or ./check-out); prints each step's summary line; exits
# non-zero if any step failed. The whole check takes about 7 minutes on the H200
# (the list about 4, the sanitizers about 3); the two environment variables below
# split it over several calls of the device tool.
#
#   scripts/device_check.sh [BUILD_DIR]          # default .carry/build
#   GLUKIT_GPU_TEST_SPEC='~[cluster]' ...        # a Catch2 test spec for the whole-list run;
#                                                # "none" skips the list
#   GLUKIT_SANITIZERS='initcheck' ...            # which tools run (default: all four; "none")
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
if [ "$spec" != none ]; then
  "$tests" ${spec:+"$spec"} > "$out/gpu_tests.txt" 2>&1 || status=1
  echo "gpu tests: $(grep -E 'All tests passed|test cases:' "$out/gpu_tests.txt" | tail -1)"
fi
[ "$tools" = none ] && tools=""
for tool in $tools; do
  compute-sanitizer --tool "$tool" --error-exitcode 1 "$tests" "[sanitize]" > "$out/sanitizer_$tool.txt" 2>&1 || status=1
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.txt" | tail -1)"
done
exit $status
