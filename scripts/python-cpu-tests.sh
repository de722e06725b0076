#!/usr/bin/env bash
# The python.cpu ctest: runs python/tests (pytest -m "not gpu": no GPU, no compiled
# extension) with the Debian sid root's python3-torch (CPU) and python3-pytest.
# Usage: python-cpu-tests.sh SID_ROOT REPO. Copies python/ into SID_ROOT/tmp, mounts /proc
# there for the run when it is not mounted (torch reads it), and chroots; needs root (or sudo
# without a password). Exits 77 (ctest: skipped) when it cannot chroot.
set -euo pipefail
sid=$1
repo=$2
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    exec sudo -n "$0" "$@"
  fi
  echo "python-cpu-tests: needs root to chroot into $sid: skipped" >&2
  exit 77
fi
for f in usr/bin/python3 usr/lib/python3/dist-packages/torch/__init__.py usr/lib/python3/dist-packages/pytest/__init__.py; do
  if [ ! -e "$sid/$f" ]; then
    echo "python-cpu-tests: $sid lacks /$f (scripts/test.sh installs python3-torch python3-pytest)" >&2
    exit 1
  fi
done
work=$(mktemp -d "$sid/tmp/glukit-python.XXXXXX")
mounted=0
cleanup() {
  if [ "$mounted" = 1 ]; then umount "$sid/proc" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cp -r "$repo/python" "$work/"
rm -rf "$work/python/build" "$work"/python/glukit/_C*.so  # the pure-Python layer only
if ! mountpoint -q "$sid/proc"; then
  mount -t proc proc "$sid/proc"
  mounted=1
fi
inside=${work#"$sid"}
chroot "$sid" env -u PYTHONPATH HOME=/tmp sh -c "cd '$inside/python' && python3 -c 'import torch; print(\"torch\", torch.__version__)' && python3 -m pytest -q -m 'not gpu' -p no:cacheprovider"
