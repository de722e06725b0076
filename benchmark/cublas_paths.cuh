// The vendor paths glukit is measured against, on row-major operands:
//  - cublas_gemm_rowmajor: C = A @ B alone (cublasGemmEx, fp16 in/out, fp32 compute);
//  - CublasLtBiasGemm: X = A @ B + bias through cuBLASLt's bias epilogue, the
//    first half of the unfused path (the gate kernel in gate_kernel.cuh is the second).
// cuBLAS is column-major: a row-major M x N matrix is the column-major N x M
// matrix of its transpose, so C^T = B^T A^T is computed by passing B as the
// first operand and A as the second, with m and n swapped, and no transposes.
#pragma once
#include <climits>
#include <cstddef>
#include <cstdint>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include "common/cuda_check.hpp"
#include "problem.hpp"

namespace glukit_bench {

inline int as_int(std::int64_t v) {
  if (v < 0 || v > INT_MAX) fatal("as_int", "a dimension does not fit cuBLAS's int", __FILE__, __LINE__);
  return static_cast<int>(v);
}

/// Row-major C (m x n, ldc) = A (m x k, lda) @ B (k x n, ldb); the handle's stream.
inline void cublas_gemm_rowmajor(cublasHandle_t handle, const GemmShape& s, const __half* a,
                                 std::int64_t lda, const __half* b, std::int64_t ldb, __half* c,
                                 std::int64_t ldc) {
  const float alpha = 1.0f, beta = 0.0f;
  GLUKIT_BENCH_CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, as_int(s.n), as_int(s.m),
                                         as_int(s.k), &alpha, b, CUDA_R_16F, as_int(ldb), a,
                                         CUDA_R_16F, as_int(lda), &beta, c, CUDA_R_16F, as_int(ldc),
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/// X = A @ B + bias (row-major, contiguous: lda = k, ldb = ldx = n) through
/// cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS. In the column-major view X^T is
/// n x m, so the bias (length n) runs along its rows: exactly the epilogue's
/// "one bias value per row of D" broadcast. The algorithm is chosen once by
/// the heuristic; run() only swaps the bias pointer.
class CublasLtBiasGemm {
 public:
  CublasLtBiasGemm(cublasLtHandle_t handle, const GemmShape& s, void* workspace,
                   std::size_t workspace_bytes, const __half* bias_for_heuristic)
      : handle_(handle), workspace_(workspace), workspace_bytes_(workspace_bytes) {
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t no_transpose = CUBLAS_OP_N;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(
        op_, CUBLASLT_MATMUL_DESC_TRANSA, &no_transpose, sizeof(no_transpose)));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(
        op_, CUBLASLT_MATMUL_DESC_TRANSB, &no_transpose, sizeof(no_transpose)));
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(
        op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    const std::int32_t bias_type = CUDA_R_16F;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(
        op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    set_bias(bias_for_heuristic);

    // Column-major layouts: first operand B^T (n x k, ld n), second A^T (k x m, ld k),
    // output X^T (n x m, ld n).
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&layout_b_, CUDA_R_16F, std::uint64_t(s.n),
                                                         std::uint64_t(s.k), s.n));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&layout_a_, CUDA_R_16F, std::uint64_t(s.k),
                                                         std::uint64_t(s.m), s.k));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&layout_x_, CUDA_R_16F, std::uint64_t(s.n),
                                                         std::uint64_t(s.m), s.n));

    cublasLtMatmulPreference_t preference = nullptr;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
        sizeof(workspace_bytes_)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle_, op_, layout_b_, layout_a_,
                                                             layout_x_, layout_x_, preference, 1,
                                                             &result, &found));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(preference));
    if (found < 1)
      fatal("cublasLtMatmulAlgoGetHeuristic", "no algorithm for fp16 GEMM with the bias epilogue",
            __FILE__, __LINE__);
    algo_ = result.algo;
  }
  CublasLtBiasGemm(const CublasLtBiasGemm&) = delete;
  CublasLtBiasGemm& operator=(const CublasLtBiasGemm&) = delete;
  ~CublasLtBiasGemm() {
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(layout_x_));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(layout_a_));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(layout_b_));
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescDestroy(op_));
  }

  /// Enqueues X = A @ B + bias on `stream`.
  void run(const __half* a, const __half* b, const __half* bias, __half* x, cudaStream_t stream) {
    set_bias(bias);
    const float alpha = 1.0f, beta = 0.0f;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmul(handle_, op_, &alpha, b, layout_b_, a, layout_a_,
                                             &beta, x, layout_x_, x, layout_x_, &algo_, workspace_,
                                             workspace_bytes_, stream));
  }

 private:
  void set_bias(const __half* bias) {
    if (bias == bias_) return;
    GLUKIT_BENCH_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(
        op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    bias_ = bias;
  }

  cublasLtHandle_t handle_;
  void* workspace_;
  std::size_t workspace_bytes_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_x_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  const __half* bias_ = nullptr;
};

}  // namespace glukit_bench
