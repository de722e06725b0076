#!/usr/bin/env bash
# Builds, on a machine with nvcc but no GPU, everything the device machine runs
# (glukit_bench, the examples, the GPU tests: target `all` with tests,
# benchmarks and examples on) into one folder that travels to the device
# machine with the working tree, and puts Google Benchmark's shared library
# beside the binaries (the device machine has none).
#
#   scripts/build_device.sh [BUILD_DIR]        # default: .carry/build
#
# Then carry BUILD_DIR (relative to the repository root) to the device machine
# and run scripts/device_bench.sh there (docs/results/README.md).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/.carry/build}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
jobs=${JOBS:-$(nproc)}
carry_limit_mib=60   # the device call carries at most 64 MiB, working tree included

command -v cmake >/dev/null || { echo "build_device.sh: cmake not found" >&2; exit 1; }
[ -x "$nvcc" ] || { echo "build_device.sh: nvcc not found at $nvcc (set NVCC=...)" >&2; exit 1; }

cmake -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DGLUKIT_BUILD_TESTS=ON \
  -DGLUKIT_BUILD_BENCHMARKS=ON \
  -DGLUKIT_BUILD_EXAMPLES=ON
cmake --build "$build" -j"$jobs"

# Google Benchmark 1.7.1 from Debian: the binary needs libbenchmark.so.1debian
# (a link to libbenchmark.so.1.7.1). Copy both as plain files into lib/ and
# next to glukit_bench (its RUNPATH is $ORIGIN).
libs=(/usr/lib/x86_64-linux-gnu/libbenchmark.so.1*)
[ -e "${libs[0]}" ] || { echo "build_device.sh: libbenchmark.so.1* not found (apt-get install libbenchmark-dev)" >&2; exit 1; }
mkdir -p "$build/lib"
cp -L "${libs[@]}" "$build/lib/"
bench=$(find "$build" -name glukit_bench -type f -perm -u+x | head -n 1)
[ -n "$bench" ] || { echo "build_device.sh: glukit_bench was not built (is CUDA found?)" >&2; exit 1; }
cp -L "${libs[@]}" "$(dirname "$bench")/"

# What was built, for the results' provenance.
if git -C "$root" rev-parse HEAD >/dev/null 2>&1; then
  rev=$(git -C "$root" rev-parse --short=12 HEAD)
  git -C "$root" diff --quiet HEAD -- 2>/dev/null || rev="$rev-dirty"
  echo "$rev" > "$build/GIT_REV"
fi

size_mib=$(du -sm "$build" | cut -f1)
echo "build_device.sh: built into $build (${size_mib} MiB)"
find "$build" -maxdepth 4 -type f -perm -u+x \( -name 'glukit_*' \) -printf '  %P\n' | sort
if [ "$size_mib" -gt "$carry_limit_mib" ]; then
  echo "build_device.sh: $build is ${size_mib} MiB, over the ${carry_limit_mib} MiB that can travel;" \
       "remove object files with: find '$build' -name '*.o' -delete" >&2
  exit 1
fi
