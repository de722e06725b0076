#!/usr/bin/env bash
# Installs python3-torch (CPU), python3-pytest and python3-transformers into the Debian sid root that
# setup-amd-toolchain.sh built, for the python.cpu test. Idempotent: skips when both are
# there. Usage: setup-python-sid.sh [DIR]. Needs root (chroot); mounts /proc for the
# installation and unmounts it after.
set -euo pipefail
root=${1:-${GLUKIT_SID_ROOT:-/opt/glukit-sid}}
py=$root/usr/lib/python3/dist-packages
if [ -f "$py/torch/__init__.py" ] && [ -f "$py/pytest/__init__.py" ] && [ -f "$py/transformers/__init__.py" ]; then
  echo "python3-torch, python3-pytest and python3-transformers: present in $root" >&2
  exit 0
fi
mounted=0
if ! mountpoint -q "$root/proc"; then
  mount -t proc proc "$root/proc"
  mounted=1
fi
trap 'if [ "$mounted" = 1 ]; then umount "$root/proc"; fi' EXIT
opt='-o Acquire::Check-Valid-Until=false'
if ! chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get $opt install -y -qq python3-torch python3-pytest >&2; then
  chroot "$root" apt-get $opt update -qq >&2
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get $opt install -y -qq python3-torch python3-pytest >&2
fi
# transformers, for the test of replace_gated_mlps on LlamaForCausalLM (skipped without it).
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get $opt install -y -qq python3-transformers >&2 ||
  echo "setup-python-sid: python3-transformers not installed; the Llama test will skip" >&2
