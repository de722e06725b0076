#!/usr/bin/env bash
# The test command (README, first line; .ci/run calls it). On a fresh Debian 12
# machine, as root, it does its own set-up: installs what is missing by package
# name, builds the Debian sid root with clang-21 + HIP 6.4 for the CDNA compile
# checks (scripts/setup-amd-toolchain.sh), configures with nvcc where present,
# builds with 2 jobs, and runs every test that needs no GPU:
#   ctest -LE gpu   (host, compile, package: install + find_package consumers, isa,
#                    python: the PyTorch layer's CPU tests with the sid root's python3-torch)
# ctest is the last step, so its summary is the last one printed.
#
# Environment (all optional):
#   GLUKIT_BUILD_DIR  build directory (default: <repo>/build)
#   GLUKIT_SID_ROOT   sid root for clang-21 (default: /opt/glukit-sid)
#   GLUKIT_NO_AMD=1   skip the sid root; the CDNA checks and the python.cpu test are then skipped
#   GLUKIT_JOBS       parallel build and test jobs (default: 2)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/common.sh
. "$repo/scripts/common.sh"

build=${GLUKIT_BUILD_DIR:-$repo/build}
sid_root=${GLUKIT_SID_ROOT:-/opt/glukit-sid}
jobs=${GLUKIT_JOBS:-2}
start=$(date +%s)
step() { echo "==> [$(( $(date +%s) - start ))s] $*"; }

step "packages"
glukit_require \
  cmake=cmd:cmake make=cmd:make g++=cmd:g++ python3=cmd:python3 \
  catch2=file:/usr/include/catch2/catch.hpp \
  libbenchmark-dev=file:/usr/include/benchmark/benchmark.h \
  debootstrap=cmd:debootstrap
glukit_check_cmake

amd_args=()
if [ "${GLUKIT_NO_AMD:-0}" = 1 ]; then
  step "AMD toolchain root: skipped (GLUKIT_NO_AMD=1)"
else
  step "AMD toolchain root (clang-21, HIP 6.4) in $sid_root"
  if [ "$(id -u)" = 0 ] || { [ -x "$sid_root/usr/bin/clang++-21" ] &&
                             [ -f "$sid_root/usr/include/hip/hip_runtime.h" ]; }; then
    sid_root=$(bash "$repo/scripts/setup-amd-toolchain.sh" "$sid_root")
  else
    sid_root=$(glukit_as_root bash "$repo/scripts/setup-amd-toolchain.sh" "$sid_root")
  fi
  amd_args=(-DGLUKIT_SID_ROOT="$sid_root")
  step "PyTorch (CPU) and pytest in $sid_root, for the python.cpu test"
  glukit_as_root bash "$repo/scripts/setup-python-sid.sh" "$sid_root"
fi

cuda_args=()
nvcc=$(glukit_find_nvcc)
if [ -n "$nvcc" ]; then
  cuda_args=(-DCMAKE_CUDA_COMPILER="$nvcc")
else
  echo "glukit: no nvcc on PATH or in /usr/local/cuda/bin: the sm_90a checks are skipped" >&2
fi

step "configure ($build)"
cmake -S "$repo" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DGLUKIT_BUILD_TESTS=ON -DGLUKIT_BUILD_EXAMPLES=ON -DGLUKIT_BUILD_BENCHMARKS=ON \
  -DGLUKIT_HEADER_CHECK=ON \
  "${amd_args[@]}" "${cuda_args[@]}"

step "build (-j$jobs)"
cmake --build "$build" -j"$jobs"

step "install ($build/install)"
cmake --install "$build" --prefix "$build/install" >/dev/null

step "ctest -LE gpu"
cd "$build"
ctest --output-on-failure -LE gpu -j"$jobs"
