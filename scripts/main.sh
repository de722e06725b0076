#!/usr/bin/env bash
# The main job (README, second line): the fused addmm + GLU at the reference
# shape on the GPU, examples/01_reference_shape (target
# glukit_example_reference_shape). Needs an NVIDIA H200 (sm_90a); without a GPU
# it says so and exits non-zero before building anything. Otherwise it does its
# own set-up (missing packages by name, nvcc from PATH or /usr/local/cuda/bin),
# configures, builds that one target and runs it; arguments are passed to it.
#
# Environment (optional): GLUKIT_BUILD_DIR (default <repo>/build-main),
# GLUKIT_JOBS (default: all cores).
set -euo pipefail

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "no NVIDIA GPU found: the main job needs an H200 (sm_90a)" >&2
  exit 1
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/common.sh
. "$repo/scripts/common.sh"

build=${GLUKIT_BUILD_DIR:-$repo/build-main}
jobs=${GLUKIT_JOBS:-$(nproc)}
target=glukit_example_reference_shape

nvidia-smi -L
glukit_require cmake=cmd:cmake make=cmd:make g++=cmd:g++
glukit_check_cmake
nvcc=$(glukit_find_nvcc)
if [ -z "$nvcc" ]; then
  echo "no nvcc found (PATH, /usr/local/cuda/bin): the main job needs CUDA 13 for sm_90a" >&2
  exit 1
fi
if [ ! -f "$repo/examples/01_reference_shape/CMakeLists.txt" ]; then
  echo "examples/01_reference_shape is missing: nothing to run" >&2
  exit 1
fi

cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DGLUKIT_BUILD_TESTS=OFF -DGLUKIT_BUILD_BENCHMARKS=OFF -DGLUKIT_BUILD_EXAMPLES=ON \
  -DGLUKIT_HEADER_CHECK=OFF
cmake --build "$build" -j"$jobs" --target "$target"

exe=$(find "$build" -type f -name "$target" -perm -u+x | head -n 1)
if [ -z "$exe" ]; then
  echo "built $target, but found no executable of that name under $build" >&2
  exit 1
fi
echo "==> $exe $*"
exec "$exe" "$@"
