// What the benchmarks of glukit_bench share within one process: the run
// settings, the device, the cuBLAS/cuBLASLt handles, the cached cuBLAS GEMM
// time per K (the denominator of every vs_cublas counter at the reference
// shape; the sweep keeps its own per shape), failure reporting, and the
// registration functions of each translation unit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include <benchmark/benchmark.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace glukit_bench {

/// --glukit_sweep: which benchmarks are registered.
enum class SweepMode {
  off,   ///< 0: the reference-shape (blog) benchmarks and the ceilings only
  on,    ///< 1 (default): those, then the LLM-shape sweep (sweep.cu)
  only,  ///< only: the sweep alone
};

struct Settings {
  int warmup = 10;     ///< untimed launches before the timed ones
  int samples = 100;   ///< timed launches per benchmark; the median is reported
  std::uint64_t seed = 0;  ///< base seed of the random inputs (context key "seed")
  std::int64_t k = 0;      ///< --glukit_k: one K instead of 256, 512 and 1024 (0: those three)
  SweepMode sweep = SweepMode::on;  ///< --glukit_sweep=0|1|only
};
Settings& settings();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  int cc_major = 0, cc_minor = 0;
};
const DeviceInfo& device_info();

cublasHandle_t cublas_handle();
cublasLtHandle_t cublaslt_handle();
void* cublaslt_workspace();
std::size_t cublaslt_workspace_bytes();

/// A seed no other benchmark of this process has used: fresh inputs each time.
std::uint64_t next_seed();

/// Marks the benchmark as failed (error in the console and the JSON) and makes
/// the process exit non-zero at the end.
void fail(benchmark::State& state, const std::string& message);
int failure_count();

/// Median time of cuBLAS GEMM at (kRefM, kRefN, k), measured once per process
/// (by cublas_gemm/<k>, or here on first use if that benchmark was filtered out).
double cublas_gemm_us(std::int64_t k);

/// Registration, in the order the benchmarks run.
void register_cublas_gemm(std::int64_t k);
void register_cublaslt_bias_then_gate(std::int64_t k);
void register_glukit_variants(std::int64_t k);
void register_copy_at_size(std::int64_t k);
void register_ceilings();
void register_sweep();
void register_gated();  ///< gated.cu: the gated projection beside cuBLAS (with the sweep)
void register_gated_backward();  ///< gated_backward.cu: the d-activation GEMM beside cuBLAS (with the sweep)
void register_addmm_backward();  ///< addmm_backward.cu: addmm_glu's backward with and without dbias (with the sweep)
void register_fp8();             ///< fp8.cu: the e4m3 gated projection beside cuBLASLt fp8 (with the sweep)
void register_moe();             ///< moe.cu: the experts of an MoE layer beside the dense GEMM (with the sweep)
void register_fp8_addmm();       ///< fp8_addmm.cu: e4m3 addmm_glu beside cuBLASLt fp8 (register_fp8 calls it)

/// The options every benchmark here shares: manual (event) time, one
/// iteration that holds the many timed launches, microseconds.
inline benchmark::internal::Benchmark* configure(benchmark::internal::Benchmark* b) {
  return b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
}

/// RAII stream.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace glukit_bench
