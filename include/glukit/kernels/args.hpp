// The problem a launcher receives (AddmmGluArgsT<T>: element type, B's layout,
// shape), the Status it returns, and the argument rules every launcher checks on
// the host before touching the device.
#pragma once
#include <cstdint>

#include "glukit/platform/element.hpp"

namespace glukit {

/// How B is stored.
enum class Layout {
  row_major,  ///< K x N, N contiguous (ldb >= n): the reference work's layout
  col_major,  ///< N x K, K contiguous (ldb >= k): an nn.Linear weight, used as is
};

/// out = epilogue(a @ b + bias, y), element strides, T in {half_t, bfloat16_t}.
/// A: m x k row-major (lda); B: k x n row-major, or its transpose stored n x k
/// (b_layout = col_major: B(kk, j) = b[j * ldb + kk]); bias: n (may be null: no
/// bias); Y: m x n row-major (ldy; may be null when the epilogue does not read it);
/// out: m x n row-major (ldo).
template <Element T>
struct AddmmGluArgsT {
  using element = T;
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

/// A kernel's operands beyond addmm_glu's (A, B, bias, Y, out), each null where its problem
/// has none: a second output (the gated backward's H, addmm_glu's backward's dY, the gated
/// projection's pre-activations P), a second input (addmm_glu's backward's gradient), the
/// fp32 vector a composition's column sums are added into (addmm_glu's backward's dbias),
/// a composition's broadcast vectors and per-row maxima (epilogue/compose.hpp:
/// Operand::row_scale, column_scale; row_absmax), and a scaled (fp8) problem's
/// dequantisation scales: A's of output row i at scale_a[i * scale_a_step], B's of its row r
/// (the output column, or W's row) at scale_b[r * scale_b_step] (step 0: one scale for the
/// whole operand). The kernel types fill it from their own argument structs for the backend
/// launchers.
template <Element T>
struct ExtraOperandsT {
  T* out2 = nullptr;
  std::int64_t ld_out2 = 0;
  const T* in2 = nullptr;
  std::int64_t ld_in2 = 0;
  float* column_sums = nullptr;
  const float* row_scale = nullptr;
  const float* column_scale = nullptr;
  float* row_absmax = nullptr;
  const float* scale_a = nullptr;
  std::int64_t scale_a_step = 0;
  const float* scale_b = nullptr;
  std::int64_t scale_b_step = 0;
};

/// The fp16 problem of the reference work (B row-major unless b_layout says otherwise).
using AddmmGluArgs = AddmmGluArgsT<half_t>;

enum class StatusCode {
  ok = 0,
  invalid_argument,   ///< an argument breaks a documented rule; nothing was launched
  unsupported_device, ///< the current device cannot run this policy
  runtime_error,      ///< the runtime reported an error at launch
};

/// Result of a launcher call. Messages are static strings that name the
/// argument and the rule it broke, e.g. "lda: must be >= k".
class Status {
 public:
  constexpr Status() = default;
  constexpr Status(StatusCode code, const char* message) : code_(code), message_(message) {}
  static constexpr Status success() { return {}; }
  static constexpr Status invalid(const char* message) {
    return {StatusCode::invalid_argument, message};
  }
  constexpr bool ok() const { return code_ == StatusCode::ok; }
  constexpr StatusCode code() const { return code_; }
  constexpr const char* message() const { return message_; }
  constexpr explicit operator bool() const { return ok(); }

 private:
  StatusCode code_ = StatusCode::ok;
  const char* message_ = "ok";
};

/// Alignment, in elements, of k, the leading dimensions and (in bytes: x2) the
/// pointers: the vectorised paths move 16-byte chunks (8 two-byte values).
inline constexpr std::int64_t vector_elems = 8;

/// Largest element count of one operand whose byte offsets still fit the
/// 32-bit-per-row, 64-bit-total index arithmetic of the kernels.
inline constexpr std::int64_t max_dimension = std::int64_t{1} << 31;

namespace detail {
inline bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}
}  // namespace detail

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
  // Element offsets (row * ld + col) are computed in 64 bits; keep the last one
  // of each operand far below 2^62 bytes so no intermediate can overflow.
  constexpr std::int64_t max_elems = std::int64_t{1} << 61;
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

}  // namespace glukit
