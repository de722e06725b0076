// addmm_glu as an op: its arguments (AddmmGluArgsT<T>), its rules, the problem the
// kernels are compiled for (Problem<T, Layout>: the element type and B's layout, the base
// of every op's problem) and its mapping onto the GEMM (op::AddmmGlu). No backend.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/epilogue/compose.hpp"
#include "glukit/epilogue/functors.hpp"
#include "glukit/ops/operands.hpp"
#include "glukit/ops/status.hpp"
#include "glukit/platform/element.hpp"

namespace glukit {

namespace op {
struct AddmmGlu;
}

/// out = epilogue(a @ b + bias, y), element strides, T in {half_t, bfloat16_t}.
/// A: m x k row-major (lda); B: k x n row-major, or its transpose stored n x k
/// (b_layout = col_major: B(kk, j) = b[j * ldb + kk]); bias: n (may be null: no
/// bias); Y: m x n row-major (ldy; may be null when the epilogue does not read it);
/// out: m x n row-major (ldo).
template <Element T>
struct AddmmGluArgsT {
  using element = T;
  using op = op::AddmmGlu;
  const T* a = nullptr;
  const T* b = nullptr;
  const T* bias = nullptr;
  const T* y = nullptr;
  T* out = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t lda = 0;
  std::int64_t ldb = 0;
  std::int64_t ldy = 0;
  std::int64_t ldo = 0;
  Layout b_layout = Layout::row_major;
};

/// The fp16 problem of the reference work (B row-major unless b_layout says otherwise).
using AddmmGluArgs = AddmmGluArgsT<half_t>;

/// The argument rules shared by every launcher (host only, no device access).
/// m == 0 or n == 0: valid no-op. k == 0: valid (out = epilogue(bias or 0, y)).
/// reads_aux = false (an epilogue that ignores Y): y and ldy are not checked; y may be null.
template <Element T>
Status validate_arguments(const AddmmGluArgsT<T>& p, bool reads_aux = true) {
  if (p.m < 0) return Status::invalid("m: must be >= 0");
  if (p.n < 0) return Status::invalid("n: must be >= 0");
  if (p.k < 0) return Status::invalid("k: must be >= 0");
  if (p.m >= max_dimension) return Status::invalid("m: must be < 2^31");
  if (p.n >= max_dimension) return Status::invalid("n: must be < 2^31");
  if (p.k >= max_dimension) return Status::invalid("k: must be < 2^31");
  if (p.b_layout != Layout::row_major && p.b_layout != Layout::col_major)
    return Status::invalid("b_layout: must be Layout::row_major or Layout::col_major");
  if (p.m == 0 || p.n == 0) return Status::success();
  const bool b_nk = p.b_layout == Layout::col_major;
  const bool need_y = reads_aux;  // an epilogue that ignores Y: y and ldy are neither read nor checked
  if (p.k > 0 && p.a == nullptr) return Status::invalid("a: must not be null");
  if (p.k > 0 && p.b == nullptr) return Status::invalid("b: must not be null");
  if (reads_aux && p.y == nullptr) return Status::invalid("y: must not be null");
  if (p.out == nullptr) return Status::invalid("out: must not be null");
  if (p.k % vector_elems != 0) return Status::invalid("k: must be a multiple of 8");
  if (p.k > 0 && p.lda < p.k) return Status::invalid("lda: must be >= k");
  if (p.k > 0 && !b_nk && p.ldb < p.n) return Status::invalid("ldb: must be >= n (b_layout = row_major: B is k x n)");
  if (p.k > 0 && b_nk && p.ldb < p.k) return Status::invalid("ldb: must be >= k (b_layout = col_major: B is n x k)");
  if (need_y && p.ldy < p.n) return Status::invalid("ldy: must be >= n");
  if (p.ldo < p.n) return Status::invalid("ldo: must be >= n");
  if (p.k > 0 && p.lda % vector_elems != 0) return Status::invalid("lda: must be a multiple of 8");
  if (p.k > 0 && p.ldb % vector_elems != 0) return Status::invalid("ldb: must be a multiple of 8");
  if (need_y && p.ldy % vector_elems != 0) return Status::invalid("ldy: must be a multiple of 8");
  if (p.ldo % vector_elems != 0) return Status::invalid("ldo: must be a multiple of 8");
  if (p.k > 0 && !detail::aligned16(p.a)) return Status::invalid("a: must be 16-byte aligned");
  if (p.k > 0 && !detail::aligned16(p.b)) return Status::invalid("b: must be 16-byte aligned");
  if (p.bias != nullptr && !detail::aligned16(p.bias))
    return Status::invalid("bias: must be 16-byte aligned");
  if (need_y && !detail::aligned16(p.y)) return Status::invalid("y: must be 16-byte aligned");
  if (!detail::aligned16(p.out)) return Status::invalid("out: must be 16-byte aligned");
  if (p.k > 0 && p.lda >= max_dimension) return Status::invalid("lda: must be < 2^31");
  if (p.k > 0 && p.ldb >= max_dimension) return Status::invalid("ldb: must be < 2^31");
  if (need_y && p.ldy >= max_dimension) return Status::invalid("ldy: must be < 2^31");
  if (p.ldo >= max_dimension) return Status::invalid("ldo: must be < 2^31");
  constexpr std::int64_t max_elems = max_elements;
  const auto too_big = [&](std::int64_t rows, std::int64_t ld) {
    return rows > 0 && ld > max_elems / rows;
  };
  if (p.k > 0 && too_big(p.m, p.lda)) return Status::invalid("lda: m * lda overflows the index range");
  if (p.k > 0 && too_big(b_nk ? p.n : p.k, p.ldb))
    return Status::invalid(b_nk ? "ldb: n * ldb overflows the index range" : "ldb: k * ldb overflows the index range");
  if (need_y && too_big(p.m, p.ldy)) return Status::invalid("ldy: m * ldy overflows the index range");
  if (too_big(p.m, p.ldo)) return Status::invalid("ldo: m * ldo overflows the index range");
  return Status::success();
}

/// The problem a kernel is compiled for: the operands' element type and B's layout.
/// A policy says how; a problem says what. The launcher picks the problem from the
/// arguments (AddmmGluArgsT<T>::b_layout) and binds it to the policy (Bound).
template <Element T, Layout LB>
struct Problem {
  using element = T;
  /// The type of A's and B's values in memory: T, or an e4m3 type for a scaled problem.
  using operand = T;
  /// A and B in e4m3 with dequantisation scales (ScaledProblem): the accumulators are
  /// multiplied by A's row scale and B's column scale before the bias is added.
  static constexpr bool scaled = false;
  static constexpr Layout b_layout = LB;
  /// B stored n x k (K contiguous): read like A, the MMA's native K-major operand.
  static constexpr bool b_k_major = LB == Layout::col_major;
  /// addmm_glu's GEMM: B's columns are the output's columns.
  static constexpr bool gated = false;
  /// The gated backward's GEMM (GatedBackwardProblem): the epilogue reads gate/up pairs.
  static constexpr bool gated_backward = false;
  /// A gated projection that also writes its pre-activations (GatedProblem).
  static constexpr bool store_preact = false;
  /// addmm_glu's backward (AddmmGluBackwardProblem): the epilogue reads two tiles.
  static constexpr bool aux_backward = false;
  /// The gated projection's backward (GatedProjectionBackwardProblem): the pre-activations
  /// recomputed, the epilogue reads the output's gradient.
  static constexpr bool projection_backward = false;
  /// A's rows gathered: tile row i is a routed row's token (GroupedGatedProblem, the experts
  /// of an MoE layer; ops/moe_experts.hpp), read by the backends' grouped kernels.
  static constexpr bool gathered = false;
  /// One GEMM per group of rows (GroupedProblem: the experts of an MoE layer), each group its
  /// own B and bias, walked by the backends' grouped kernels.
  static constexpr bool grouped = false;
  /// The epilogue of operation Op on this problem's tile (epilogue/compose.hpp).
  template <class Op>
  using composition = epilogue::Elementwise<Op>;
};

namespace op {
/// addmm_glu: the GEMM's own arguments, the problem of their b_layout.
struct AddmmGlu {
  /// The operation the default runs unless one is named.
  using default_operation = epilogue::GluGate;
  template <class /*Arch*/ = void, Element T>
  static Status validate(const AddmmGluArgsT<T>& a, bool reads_aux) {
    return validate_arguments(a, reads_aux);
  }
  /// f.template operator()<Problem>(gemm arguments, operands beyond them) for the problem
  /// the arguments pick; f's result.
  template <Element T, class F>
  static Status bind(const AddmmGluArgsT<T>& a, F&& f) {
    if (a.b_layout == Layout::col_major)
      return f.template operator()<Problem<T, Layout::col_major>>(a, ExtraOperandsT<T>{});
    return f.template operator()<Problem<T, Layout::row_major>>(a, ExtraOperandsT<T>{});
  }
  /// The problem check_policy binds a policy to.
  using policy_problem = Problem<half_t, Layout::row_major>;
};
}  // namespace op

}  // namespace glukit
