#!/usr/bin/env bash
# Builds (once) a Debian sid root holding clang-21, lld-21, HIP 6.4 and rocPRIM 6.4:
# the compiler that knows gfx950. Usage: setup-amd-toolchain.sh [DIR]
# Idempotent: an existing root with clang++-21 is reused. Needs root (debootstrap, chroot).
set -euo pipefail
root=${1:-${GLUKIT_SID_ROOT:-/opt/glukit-sid}}
if [ -x "$root/usr/bin/clang++-21" ] && [ -f "$root/usr/include/hip/hip_runtime.h" ]; then
  echo "$root"; exit 0
fi
if ! command -v debootstrap >/dev/null; then
  apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq debootstrap >&2
fi
mkdir -p "$root"
[ -x "$root/bin/bash" ] || debootstrap --variant=minbase sid "$root" >&2
opt='-o Acquire::Check-Valid-Until=false'
chroot "$root" apt-get $opt update -qq >&2
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get $opt install -y -qq \
  clang-21 lld-21 libamdhip64-dev librocprim-dev >&2
echo "$root"
