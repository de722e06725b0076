# Shared set-up of scripts/test.sh and scripts/main.sh (sourced, not run):
# package installation by name, and finding nvcc.

# Runs a command as root: directly, or through sudo when available.
glukit_as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "glukit: need root to run: $*" >&2
    return 1
  fi
}

# glukit_require PKG:CHECK ... : installs (apt-get, by package name) every PKG
# whose CHECK fails. CHECK is a command name ("cmd:cmake") or a file that the
# package provides ("file:/usr/include/catch2/catch.hpp").
glukit_require() {
  local missing=() spec pkg check
  for spec in "$@"; do
    pkg=${spec%%=*}
    check=${spec#*=}
    case $check in
      cmd:*) command -v "${check#cmd:}" >/dev/null 2>&1 || missing+=("$pkg") ;;
      file:*) [ -e "${check#file:}" ] || missing+=("$pkg") ;;
      *) echo "glukit_require: bad check '$check'" >&2; return 2 ;;
    esac
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "glukit: installing missing packages: ${missing[*]}" >&2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "glukit: no apt-get here; install ${missing[*]} by hand" >&2
    return 1
  fi
  local apt=(apt-get -o DPkg::Lock::Timeout=300 -q)
  glukit_as_root env DEBIAN_FRONTEND=noninteractive "${apt[@]}" update >&2
  glukit_as_root env DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends \
    "${missing[@]}" >&2
}

# Fails unless cmake is at least 3.25.
glukit_check_cmake() {
  local v
  v=$(cmake --version | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')
  if [ "$(printf '%s\n%s\n' 3.25 "$v" | sort -V | head -1)" != 3.25 ]; then
    echo "glukit: cmake $v is too old; 3.25 or newer is needed" >&2
    return 1
  fi
}

# Prints the path of nvcc (PATH, then /usr/local/cuda/bin), or nothing.
glukit_find_nvcc() {
  if [ -n "${CUDACXX:-}" ] && [ -x "$CUDACXX" ]; then
    echo "$CUDACXX"
  elif command -v nvcc >/dev/null 2>&1; then
    command -v nvcc
  elif [ -x /usr/local/cuda/bin/nvcc ]; then
    echo /usr/local/cuda/bin/nvcc
  fi
}
