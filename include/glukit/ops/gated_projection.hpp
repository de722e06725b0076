// The gated projection as an op: out = op(A W_g^T + b_g, A W_u^T + b_u) with the gate
// and up weights of an LLM MLP held as one nn.Linear weight W of 2n rows
// (GatedProjectionArgsT<T>), the two row orders frameworks use (GateLayout), the row maps
// between them (host and device use the same maps), a one-time conversion of a stacked
// weight to the interleaved order, the argument rules, the problem (GatedProblem: each
// tile's B rows are whole gate/up pairs) and the mapping onto the GEMM. No backend.
#pragma once
#include <cstdint>
#include <cstring>

#include "glukit/ops/addmm_glu.hpp"
#include "glukit/platform/config.hpp"

namespace glukit {

namespace op {
struct GatedProjection;
}


/// How the gate and up rows of W (2n x k) are ordered.
enum class GateLayout {
  stacked,      ///< [W_g; W_u]: gate row j is row j, up row j is row n + j
  interleaved,  ///< blocks of gate_interleave_rows gate rows, then as many up rows, alternating
};

/// Rows per block of the interleaved order. 64 is one 128-byte swizzle atom's rows
/// of a K-major tile and divides every sm90a tile width (128, 192, 256): a tile of W
/// rows then holds whole (gate block, up block) pairs, whose columns meet inside one
/// thread's accumulator fragment (they are 64 columns apart), so the kernel needs no
/// second B panel and no exchange between threads.
inline constexpr std::int64_t gate_interleave_rows = 64;

/// out = op(gate, up), gate = A W_g^T + b_g, up = A W_u^T + b_u; row-major, element strides.
/// A: m x k (lda); W: 2n x k (ldw), an nn.Linear weight in w_layout's row order;
/// bias: 2n in the same order as W's rows, or null; out: m x n (ldo).
template <Element T>
struct GatedProjectionArgsT {
  using element = T;
  using op = op::GatedProjection;
  const T* a = nullptr;
  const T* w = nullptr;
  const T* bias = nullptr;
  T* out = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t lda = 0;
  std::int64_t ldw = 0;
  std::int64_t ldo = 0;
  GateLayout w_layout = GateLayout::stacked;
  /// Optional, for training: the pre-activations P = A W^T + bias (m x 2n, ldp, columns in
  /// W's row order), written beside out for the gated backward (ops/gated_backward.hpp).
  /// n must then be a multiple of 8. sm90a warp-specialised kernels only.
  T* p = nullptr;
  std::int64_t ldp = 0;
};

/// The row of W (and of the bias) that holds output column j's gate / up weights.
GLUKIT_HOST_DEVICE constexpr std::int64_t gate_row(std::int64_t j, std::int64_t /*n*/, GateLayout layout) {
  if (layout == GateLayout::stacked) return j;
  return (j / gate_interleave_rows) * 2 * gate_interleave_rows + j % gate_interleave_rows;
}
GLUKIT_HOST_DEVICE constexpr std::int64_t up_row(std::int64_t j, std::int64_t n, GateLayout layout) {
  if (layout == GateLayout::stacked) return n + j;
  return gate_row(j, n, layout) + gate_interleave_rows;
}

/// How a gated kernel orders W's rows inside one tile: a tile of 2c GEMM columns (the
/// B rows it multiplies with) yields c output columns, in runs of Q: tile column t holds
/// output column out_col(t), the gate's value when !is_up(t), the up projection's
/// otherwise, and its partner (the same output column's other half) is tile column
/// t +/- Q. A backend picks Q so that every thread's accumulator fragment holds both
/// members of each pair (sm90a wgmma: Q = 64, a warpgroup holds whole rows of the tile;
/// CDNA: half a wave's columns). Every run of Q rows is contiguous in W for both
/// layouts when Q divides gate_interleave_rows, so a copier moves runs, not rows.
template <int Q>
struct GatePairs {
  static_assert(Q > 0 && gate_interleave_rows % Q == 0,
                "GatePairs: Q must divide gate_interleave_rows (each run of Q rows contiguous in W)");
  static constexpr int run = Q;
  /// Output column (from the tile's first) of tile column t.
  GLUKIT_HOST_DEVICE static constexpr int out_col(int t) { return (t / (2 * Q)) * Q + t % Q; }
  /// Does tile column t hold the up projection (else the gate)?
  GLUKIT_HOST_DEVICE static constexpr bool is_up(int t) { return (t / Q) % 2 == 1; }
  /// W's row (and bias index) of tile column t of the tile whose output starts at column
  /// j0; n: output columns (W has 2n rows). Rows of output columns past n are not
  /// used: a copier reads rows_valid() of each run.
  GLUKIT_HOST_DEVICE static constexpr std::int64_t w_row(std::int64_t j0, int t, std::int64_t n, GateLayout layout) {
    const std::int64_t j = j0 + out_col(t);
    return is_up(t) ? up_row(j, n, layout) : gate_row(j, n, layout);
  }
  /// Rows of the run that starts at tile column t (t % Q == 0) that belong to output
  /// columns < n (0..Q).
  GLUKIT_HOST_DEVICE static constexpr int rows_valid(std::int64_t j0, int t, std::int64_t n) {
    const std::int64_t left = n - (j0 + out_col(t));
    return left <= 0 ? 0 : left >= Q ? Q : static_cast<int>(left);
  }
};

/// The argument rules of the gated projection (host only, no device access): as
/// addmm_glu's for A (m x k), W (2n x k, K contiguous: ldw >= k) and out (m x n, ldo >= n);
/// n < 2^30 (W has 2n rows); for the interleaved order n a multiple of
/// gate_interleave_rows. m == 0 or n == 0: valid no-op; k == 0: out = op(b_g, b_u).
template <Element T>
Status validate_gated_arguments(const GatedProjectionArgsT<T>& p) {
  if (p.m < 0) return Status::invalid("m: must be >= 0");
  if (p.n < 0) return Status::invalid("n: must be >= 0");
  if (p.k < 0) return Status::invalid("k: must be >= 0");
  if (p.m >= max_dimension) return Status::invalid("m: must be < 2^31");
  if (p.n >= max_dimension / 2) return Status::invalid("n: must be < 2^30 (W has 2n rows)");
  if (p.k >= max_dimension) return Status::invalid("k: must be < 2^31");
  if (p.w_layout != GateLayout::stacked && p.w_layout != GateLayout::interleaved)
    return Status::invalid("w_layout: must be GateLayout::stacked or GateLayout::interleaved");
  if (p.w_layout == GateLayout::interleaved && p.n % gate_interleave_rows != 0)
    return Status::invalid("n: must be a multiple of 64 for GateLayout::interleaved (whole gate/up blocks)");
  if (p.m == 0 || p.n == 0) return Status::success();
  const bool uses_ab = p.k > 0;
  if (uses_ab && p.a == nullptr) return Status::invalid("a: must not be null");
  if (uses_ab && p.w == nullptr) return Status::invalid("w: must not be null");
  if (p.out == nullptr) return Status::invalid("out: must not be null");
  if (p.k % vector_elems != 0) return Status::invalid("k: must be a multiple of 8");
  if (uses_ab && (p.lda < p.k || p.lda % vector_elems != 0 || p.lda >= max_dimension))
    return Status::invalid("lda: must be >= k, a multiple of 8 and < 2^31");
  if (uses_ab && (p.ldw < p.k || p.ldw % vector_elems != 0 || p.ldw >= max_dimension))
    return Status::invalid("ldw: must be >= k, a multiple of 8 and < 2^31 (W is 2n x k)");
  if (p.ldo < p.n || p.ldo % vector_elems != 0 || p.ldo >= max_dimension)
    return Status::invalid("ldo: must be >= n, a multiple of 8 and < 2^31");
  if (uses_ab && !detail::aligned16(p.a)) return Status::invalid("a: must be 16-byte aligned");
  if (uses_ab && !detail::aligned16(p.w)) return Status::invalid("w: must be 16-byte aligned");
  if (p.bias != nullptr && !detail::aligned16(p.bias)) return Status::invalid("bias: must be 16-byte aligned");
  if (!detail::aligned16(p.out)) return Status::invalid("out: must be 16-byte aligned");
  if (p.p != nullptr) {
    if (p.n % vector_elems != 0) return Status::invalid("n: must be a multiple of 8 when p is written");
    if (p.ldp < 2 * p.n || p.ldp % vector_elems != 0 || p.ldp >= max_dimension)
      return Status::invalid("ldp: must be >= 2n, a multiple of 8 and < 2^31");
    if (!detail::aligned16(p.p)) return Status::invalid("p: must be 16-byte aligned");
  }
  constexpr std::int64_t max_elems = max_elements;
  if (uses_ab && p.lda > max_elems / p.m) return Status::invalid("lda: m * lda overflows the index range");
  if (uses_ab && p.ldw > max_elems / (2 * p.n)) return Status::invalid("ldw: 2n * ldw overflows the index range");
  if (p.ldo > max_elems / p.m) return Status::invalid("ldo: m * ldo overflows the index range");
  if (p.p != nullptr && p.ldp > max_elems / p.m) return Status::invalid("ldp: m * ldp overflows the index range");
  return Status::success();
}

/// Converts a stacked weight (2n x k, ld) or bias (ld = 1, k = 1) to the interleaved
/// order, once, on the host: row j of the result is row gate_row / up_row of the map's
/// inverse. `dst` and `src` must not overlap; n a multiple of gate_interleave_rows.
template <class E>
void interleave_gate_up_rows(const E* src, E* dst, std::int64_t n, std::int64_t k, std::int64_t ld) {
  for (std::int64_t j = 0; j < n; ++j) {
    std::memcpy(dst + gate_row(j, n, GateLayout::interleaved) * ld, src + j * ld,
                sizeof(E) * static_cast<std::size_t>(k));
    std::memcpy(dst + up_row(j, n, GateLayout::interleaved) * ld, src + (n + j) * ld,
                sizeof(E) * static_cast<std::size_t>(k));
  }
}

/// The gated projection's problem: B is an nn.Linear weight W (2n x k, K contiguous) whose
/// rows are gate and up rows in layout GL's order; each tile multiplies whole gate/up
/// pairs (GatePairs, ops/gated_projection.hpp) and its epilogue combines them, op(gate, up),
/// into half as many output columns. Bound kernels read detail::gemm_view's arguments.
/// Preact: the kernel also writes the pre-activations P = A W^T + bias (m x 2n, W's row
/// order) beside the output (what the gated backward reads; GatedProjectionArgsT::p).
template <Element T, GateLayout GL, bool Preact = false>
struct GatedProblem : Problem<T, Layout::col_major> {
  static constexpr bool gated = true;
  static constexpr GateLayout gate_layout = GL;
  static constexpr bool store_preact = Preact;
  template <class Op>
  using composition = std::conditional_t<Preact, epilogue::GatedPreact<Op>, epilogue::Gated<Op>>;
};

namespace detail {
/// The GEMM a gated kernel runs, in addmm_glu's argument form: B = W stored n x k
/// (col_major), n = the output's columns (W has 2n rows), the bias of W's 2n rows, no Y.
/// Backends bound to a GatedProblem read their arguments from this view.
template <Element T>
constexpr AddmmGluArgsT<T> gemm_view(const GatedProjectionArgsT<T>& p) {
  AddmmGluArgsT<T> g;
  g.a = p.a, g.b = p.w, g.bias = p.bias, g.y = nullptr, g.out = p.out;
  g.m = p.m, g.n = p.n, g.k = p.k, g.lda = p.lda, g.ldb = p.ldw, g.ldy = 0, g.ldo = p.ldo;
  g.b_layout = Layout::col_major;
  return g;
}
}  // namespace detail

namespace op {
/// The gated projection: the GEMM over W's 2n rows in gate/up pairs (w_layout's order),
/// writing the pre-activations beside the output where p is given.
struct GatedProjection {
  /// The operation the default runs unless one is named.
  using default_operation = epilogue::SwiGlu;
  template <class /*Arch*/ = void, Element T>
  static Status validate(const GatedProjectionArgsT<T>& a, bool /*reads_aux*/) {
    return validate_gated_arguments(a);
  }
  template <Element T, class F>
  static Status bind(const GatedProjectionArgsT<T>& a, F&& f) {
    const AddmmGluArgsT<T> gemm = detail::gemm_view(a);
    constexpr GateLayout st = GateLayout::stacked, il = GateLayout::interleaved;
    const bool inter = a.w_layout == il;
    if (a.p != nullptr) {
      const ExtraOperandsT<T> x{.preact = {a.p, a.ldp}};
      return inter ? f.template operator()<GatedProblem<T, il, true>>(gemm, x)
                   : f.template operator()<GatedProblem<T, st, true>>(gemm, x);
    }
    return inter ? f.template operator()<GatedProblem<T, il>>(gemm, ExtraOperandsT<T>{})
                 : f.template operator()<GatedProblem<T, st>>(gemm, ExtraOperandsT<T>{});
  }
  using policy_problem = GatedProblem<half_t, GateLayout::stacked>;
};
}  // namespace op

}  // namespace glukit
