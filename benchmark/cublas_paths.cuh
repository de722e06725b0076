// The vendor paths glukit is measured against, on row-major A and out, B in
// either layout (T = __half or __nv_bfloat16, fp32 compute):
//  - cublas_gemm_rowmajor: C = A @ B alone through cublasGemmEx's default algorithm;
//  - CublasLtGemm: C = A @ B, or X = A @ B + bias (CUBLASLT_EPILOGUE_BIAS, the first
//    half of the unfused path; the gate kernel in gate_kernel.cuh is the second),
//    through cublasLtMatmul with any of the heuristic's top candidates.
// cuBLAS is column-major: a row-major M x N matrix is the column-major N x M
// matrix of its transpose, so C^T = B^T A^T is computed by passing B as the
// first operand and A as the second, with m and n swapped. A row-major K x N B
// is B^T as a column-major N x K matrix (no transpose); an N x K B (an
// nn.Linear weight, Layout::col_major) is B as a column-major K x N matrix, so
// the first operand takes CUBLAS_OP_T. Nothing is ever transposed in memory.
#pragma once
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/cuda_check.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "problem.hpp"

namespace glukit_bench {

inline int as_int(std::int64_t v) {
  if (v < 0 || v > INT_MAX) fatal("as_int", "a dimension does not fit cuBLAS's int", __FILE__, __LINE__);
  return static_cast<int>(v);
}

/// cuBLAS's name of the element type.
template <class T>
constexpr cudaDataType_t cuda_data_type() {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
                "glukit_bench: cuBLAS paths take __half or __nv_bfloat16");
  return std::is_same_v<T, __half> ? CUDA_R_16F : CUDA_R_16BF;
}

/// The operation on cuBLAS's first operand (B^T in the column-major view) for B's layout.
inline cublasOperation_t first_operand_op(glukit::Layout b_layout) {
  return b_layout == glukit::Layout::col_major ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/// Row-major C (m x n, ldc) = A (m x k, lda) @ B (k x n, or n x k for col_major; ldb)
/// with cublasGemmEx's default algorithm; the handle's stream.
template <class T>
void cublas_gemm_rowmajor(cublasHandle_t handle, const GemmShape& s, const T* a, std::int64_t lda,
                          const T* b, std::int64_t ldb, T* c, std::int64_t ldc,
                          glukit::Layout b_layout = glukit::Layout::row_major) {
  const float alpha = 1.0f, beta = 0.0f;
  constexpr cudaDataType_t type = cuda_data_type<T>();
  GLUKIT_BENCH_CHECK_CUBLAS(cublasGemmEx(handle, first_operand_op(b_layout), CUBLAS_OP_N, as_int(s.n),
                                         as_int(s.m), as_int(s.k), &alpha, b, type, as_int(ldb), a,
                                         type, as_int(lda), &beta, c, type, as_int(ldc),
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/// What cuBLASLt fuses after the GEMM.
enum class LtEpilogue {
  none,  ///< C = A @ B (CUBLASLT_EPILOGUE_DEFAULT)
  bias,  ///< X = A @ B + bias (CUBLASLT_EPILOGUE_BIAS)
};

/// cuBLASLt candidates asked of the heuristic for a best-of-N choice.
inline constexpr int kHeuristicCandidates = 8;

/// C = A @ B (+ bias) on contiguous operands (lda = k, ldc = n; ldb = n for B row-major,
/// k for B col_major) through cublasLtMatmul. The heuristic's top `candidates` algorithms
/// are kept; run() uses the selected one (the heuristic's first until select()).
/// With the bias epilogue, X^T is n x m in the column-major view, so the bias (length n)
/// runs along its rows: exactly the epilogue's "one bias value per row of D" broadcast.
template <class T>
class CublasLtGemm {
 public:
  CublasLtGemm(cublasLtHandle_t handle, const GemmShape& s, void* workspace, std::size_t workspace_bytes,
               LtEpilogue epilogue, glukit::Layout b_layout = glukit::Layout::row_major,
               int candidates = 1)
      : handle_(handle), workspace_(workspace), workspace_bytes_(workspace_bytes) {
    constexpr cudaDataType_t type = cuda_data_type<T>();
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t first_op = first_operand_op(b_layout), second_op = CUBLAS_OP_N;
    GLUKIT_BENCH_CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &first_op, sizeof(first_op)));
    GLUKIT_BENCH_CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &second_op, sizeof(second_op)));
    const cublasLtEpilogue_t lt_epilogue =
        epilogue == LtEpilogue::bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    GLUKIT_BENCH_CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt_epilogue, sizeof(lt_epilogue)));
    if (epilogue == LtEpilogue::bias) {
      const std::int32_t bias_type = type;
      GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                               &bias_type, sizeof(bias_type)));
    }

    // Column-major layouts: the first operand is B as stored (n x k, ld n, or k x n,
    // ld k, transposed by the op), the second A^T (k x m, ld k), the output C^T (n x m, ld n).
    const bool nk = b_layout == glukit::Layout::col_major;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&layout_b_, type, std::uint64_t(nk ? s.k : s.n),
                                                         std::uint64_t(nk ? s.n : s.k), nk ? s.k : s.n));
    GLUKIT_BENCH_CHECK_CUBLAS(
        cublasLtMatrixLayoutCreate(&layout_a_, type, std::uint64_t(s.k), std::uint64_t(s.m), s.k));
    GLUKIT_BENCH_CHECK_CUBLAS(
        cublasLtMatrixLayoutCreate(&layout_x_, type, std::uint64_t(s.n), std::uint64_t(s.m), s.n));

    cublasLtMatmulPreference_t preference = nullptr;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_, sizeof(workspace_bytes_)));
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(candidates > 0 ? candidates : 1));
    int found = 0;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle_, op_, layout_b_, layout_a_, layout_x_,
                                                             layout_x_, preference, static_cast<int>(results.size()),
                                                             results.data(), &found));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(preference));
    for (int i = 0; i < found; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS) algos_.push_back(results[i].algo);
    if (algos_.empty())
      fatal("cublasLtMatmulAlgoGetHeuristic", "no algorithm for this GEMM and epilogue", __FILE__, __LINE__);
  }
  /// The fp16 row-major bias GEMM of the reference shape with the heuristic's first
  /// algorithm (the unfused reference the blog variants are checked against).
  CublasLtGemm(cublasLtHandle_t handle, const GemmShape& s, void* workspace, std::size_t workspace_bytes,
               const T* /*bias, set at each run*/)
      : CublasLtGemm(handle, s, workspace, workspace_bytes, LtEpilogue::bias) {}
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;
  ~CublasLtGemm() {
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(layout_x_));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(layout_a_));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(layout_b_));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescDestroy(op_));
  }

  /// Candidates the heuristic returned (1 .. the count asked for).
  int candidates() const { return static_cast<int>(algos_.size()); }
  int selected() const { return selected_; }
  void select(int candidate) { selected_ = candidate; }

  /// The candidate's configuration, e.g. "id 66 tile 20 stages 35 splitk 1 swizzle 0 cluster 2"
  /// (the numbers of cuBLASLt's enums: cublasLtMatmulTile_t, cublasLtMatmulStages_t, ...).
  std::string describe(int candidate) const {
    const cublasLtMatmulAlgo_t& algo = algos_[static_cast<std::size_t>(candidate)];
    const auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr, auto zero) {
      decltype(zero) value = zero;
      std::size_t written = 0;
      GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written));
      return std::to_string(value);
    };
    return "id " + get(CUBLASLT_ALGO_CONFIG_ID, std::int32_t{0}) + " tile " +
           get(CUBLASLT_ALGO_CONFIG_TILE_ID, std::uint32_t{0}) + " stages " +
           get(CUBLASLT_ALGO_CONFIG_STAGES_ID, std::uint32_t{0}) + " splitk " +
           get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, std::int32_t{0}) + " swizzle " +
           get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, std::uint32_t{0}) + " cluster " +
           get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, std::uint16_t{0});
  }

  /// Enqueues C = A @ B (+ bias: ignored without the bias epilogue) on `stream` with
  /// candidate `candidate`; returns cuBLASLt's status (a candidate may refuse to run).
  cublasStatus_t try_run(int candidate, const T* a, const T* b, const T* bias, T* c, cudaStream_t stream) {
    if (bias != nullptr) set_bias(bias);
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(handle_, op_, &alpha, b, layout_b_, a, layout_a_, &beta, c, layout_x_, c, layout_x_,
                          &algos_[static_cast<std::size_t>(candidate)], workspace_, workspace_bytes_, stream);
  }
  /// ... with the selected candidate; a failure ends the process.
  void run(const T* a, const T* b, const T* bias, T* c, cudaStream_t stream) {
    GLUKIT_BENCH_CHECK_CUBLAS(try_run(selected_, a, b, bias, c, stream));
  }

 private:
  void set_bias(const T* bias) {
    if (bias == bias_) return;
    GLUKIT_BENCH_CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    bias_ = bias;
  }

  cublasLtHandle_t handle_;
  void* workspace_;
  std::size_t workspace_bytes_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_x_ = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algos_;
  int selected_ = 0;
  const T* bias_ = nullptr;
};

}  // namespace glukit_bench
