// What every op's argument rules share: the Status a launcher returns, B's layout,
// the alignment and size limits, and the stride rule each op states per tensor.
#pragma once
#include <cstdint>

namespace glukit {

/// How B is stored.
enum class Layout {
  row_major,  ///< K x N, N contiguous (ldb >= n): the reference work's layout
  col_major,  ///< N x K, K contiguous (ldb >= k): an nn.Linear weight, used as is
};

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

/// Largest row * stride of an operand: element offsets are computed in 64 bits, and the
/// last one of each operand stays far below 2^62 bytes so no intermediate can overflow.
inline constexpr std::int64_t max_elements = std::int64_t{1} << 61;

namespace detail {
inline bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}
/// A stride that breaks the rule of a tensor `width` wide: ld >= width, a multiple of
/// `multiple` (8 elements: 16 bytes of a 16-bit tensor; 16 for e4m3 codes), < 2^31.
constexpr bool bad_stride(std::int64_t ld, std::int64_t width, std::int64_t multiple = vector_elems) {
  return ld < width || ld % multiple != 0 || ld >= max_dimension;
}
}  // namespace detail

}  // namespace glukit
