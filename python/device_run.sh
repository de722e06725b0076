#!/usr/bin/env bash
# On the GPU machine (H200, PyTorch with CUDA and its nvcc), from the repository root with
# $OUT set: builds glukit's PyTorch extension in place (python/glukit/_C*.so, sm_90a),
# runs the GPU pytest (GLUKIT_PYTEST_MARK= for the CPU tests too) and python/bench.py. Writes under $OUT: versions.txt,
# build.log, pytest.log, pytest.xml, bench.log, bench.json. Fails loudly: the first failing
# step stops the script with its log's tail. On the H200 machine (16 cores) the build,
# the 598 tests and the bench took about 180 s together (2026-12-01).
set -euo pipefail
: "${OUT:?set OUT to the output directory}"
mkdir -p "$OUT"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo/python"
start=$(date +%s)
step() { echo "==> [$(( $(date +%s) - start ))s] $*"; }
fail() { echo "device_run: FAILED: $1 (last lines of $2):" >&2; tail -n 60 "$2" >&2; exit 1; }
py=${PYTHON:-python3}

step "versions"
{
  echo "python: $($py --version 2>&1) ($(command -v "$py"))"
  $py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cuda available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name() if torch.cuda.is_available() else None, torch.cuda.get_device_capability() if torch.cuda.is_available() else None)'
  $py -c 'from torch.utils.cpp_extension import CUDA_HOME; print("CUDA_HOME", CUDA_HOME)'
  nvcc_bin=$($py -c 'from torch.utils.cpp_extension import CUDA_HOME; print(CUDA_HOME or "")')/bin/nvcc
  echo "nvcc: $("$nvcc_bin" --version 2>&1 | tail -n 2 | tr '\n' ' ')"
  echo "ninja: $(command -v ninja || $py -c 'import ninja; print(ninja.__file__)' 2>/dev/null || echo none)"
  echo "pytest: $($py -m pytest --version 2>&1)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
} 2>&1 | tee "$OUT/versions.txt"

step "build the extension (sm_90a, MAX_JOBS=16)"
rm -rf build glukit/_C*.so
export TORCH_CUDA_ARCH_LIST="9.0a" MAX_JOBS=16  # setup.py passes -gencode compute_90a,sm_90a itself
$py setup.py build_ext --inplace > "$OUT/build.log" 2>&1 || fail "building the extension" "$OUT/build.log"
ls -l glukit/_C*.so | tee -a "$OUT/build.log"
$py -c 'import glukit; assert glukit.cuda_available(), glukit.extension_error(); print("glukit._C:", glukit._C.__file__)' \
  >> "$OUT/build.log" 2>&1 || fail "importing glukit._C" "$OUT/build.log"

# The GPU tests only by default: the CPU tests run in CI (scripts/python-cpu-tests.sh), and
# their torch.compile cases alone outlast a device call (2026-12-05: the build took 214 s,
# and 1726 tests with the CPU ones among them were not done at 400 s). GLUKIT_PYTEST_MARK=
# (empty) runs both.
mark=${GLUKIT_PYTEST_MARK-gpu}
step "pytest (${mark:-GPU and CPU} tests)"
$py -m pytest -v -p no:cacheprovider ${mark:+-m "$mark"} --junitxml="$OUT/pytest.xml" tests > "$OUT/pytest.log" 2>&1 \
  || fail "pytest" "$OUT/pytest.log"
tail -n 3 "$OUT/pytest.log"

step "bench.py"
$py bench.py "$OUT/bench.json" > "$OUT/bench.log" 2>&1 || fail "bench.py" "$OUT/bench.log"
cat "$OUT/bench.log"
step "done"
