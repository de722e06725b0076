// Tests of ops/fp8.hpp: every rule of the e4m3 gated projection's and addmm_glu's
// argument checks names its argument; valid arguments pass; the kernels' half-width view
// holds the same bytes (k and the e4m3 strides halved, the 16-bit ones kept) and the scale
// operands carry the kinds as steps; the scaled problems take B K-major only; each chip's e4m3
// encoding (OCP on sm90a and gfx950, FNUZ on gfx942) and the FNUZ arguments' rules.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "glukit/glukit.hpp"

using glukit::ScaleKind;
using glukit::Status;

namespace {
alignas(16) unsigned char bytes[256];
alignas(16) glukit::bfloat16_t halves[64];
alignas(16) float floats[16];

const glukit::float8_e4m3_t* fp8_at(int offset) {
  return reinterpret_cast<const glukit::float8_e4m3_t*>(bytes + offset);
}

glukit::GatedProjectionFp8ArgsT<glukit::bfloat16_t> gated() {
  glukit::GatedProjectionFp8ArgsT<glukit::bfloat16_t> p;
  p.a = fp8_at(0), p.w = fp8_at(64), p.scale_a = floats, p.scale_w = floats + 4;
  p.bias = halves, p.out = halves + 16;
  p.m = 4096, p.n = 14336, p.k = 4096, p.lda = 4096, p.ldw = 4112, p.ldo = 14336;
  p.scale_a_kind = ScaleKind::per_row;
  return p;
}
glukit::AddmmGluFp8ArgsT<glukit::bfloat16_t> addmm() {
  glukit::AddmmGluFp8ArgsT<glukit::bfloat16_t> p;
  p.a = fp8_at(0), p.b = fp8_at(64), p.scale_a = floats, p.scale_b = floats + 4;
  p.bias = halves, p.y = halves + 8, p.out = halves + 16;
  p.m = 1024, p.n = 21568, p.k = 1024, p.lda = 1024, p.ldb = 1024, p.ldy = 21568, p.ldo = 21568;
  return p;
}
template <class Args>
std::string message_of(const Args& a) {
  if constexpr (requires { a.w; }) return glukit::validate_gated_arguments(a).message();
  else return glukit::validate_arguments(a).message();
}
bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

TEST_CASE("fp8: valid arguments pass, and m = 0 or n = 0 need nothing else") {
  CHECK(glukit::validate_gated_arguments(gated()).ok());
  CHECK(glukit::validate_arguments(addmm()).ok());
  glukit::GatedProjectionFp8ArgsT<glukit::bfloat16_t> empty;
  CHECK(glukit::validate_gated_arguments(empty).ok());
  empty.n = 5;
  empty.k = 7;  // nothing to multiply: no rule of k applies
  CHECK(glukit::validate_gated_arguments(empty).ok());
}

TEST_CASE("fp8 gated projection: every rule names its argument") {
  auto p = gated();
  p.k = 4088;  // a multiple of 8, not of 16
  CHECK(starts_with(message_of(p), "k:"));
  p = gated(), p.lda = 4104;
  CHECK(starts_with(message_of(p), "lda:"));
  p = gated(), p.lda = 4080;
  CHECK(starts_with(message_of(p), "lda:"));
  p = gated(), p.ldw = 4104;
  CHECK(starts_with(message_of(p), "ldw:"));
  p = gated(), p.scale_a = nullptr;
  CHECK(starts_with(message_of(p), "scale_a:"));
  p = gated(), p.scale_w = nullptr;
  CHECK(starts_with(message_of(p), "scale_w:"));
  p = gated(), p.scale_a = reinterpret_cast<const float*>(bytes + 2);
  CHECK(starts_with(message_of(p), "scale_a:"));
  p = gated(), p.scale_a_kind = static_cast<ScaleKind>(3);
  CHECK(starts_with(message_of(p), "scale_a_kind:"));
  p = gated(), p.a = fp8_at(8);  // 8-byte aligned only
  CHECK(starts_with(message_of(p), "a:"));
  p = gated(), p.out = nullptr;
  CHECK(starts_with(message_of(p), "out:"));
  p = gated(), p.w_layout = glukit::GateLayout::interleaved, p.n = 100;
  CHECK(starts_with(message_of(p), "n:"));
}

TEST_CASE("fp8 addmm_glu: every rule names its argument") {
  auto p = addmm();
  p.ldb = 1000;
  CHECK(starts_with(message_of(p), "ldb:"));
  p = addmm(), p.scale_b = nullptr;
  CHECK(starts_with(message_of(p), "scale_b:"));
  p = addmm(), p.y = nullptr;
  CHECK(starts_with(message_of(p), "y:"));
  p = addmm(), p.ldo = 21560;
  CHECK(starts_with(message_of(p), "ldo:"));
}

TEST_CASE("fp8: the kernels' half-width view and scale operands") {
  const auto p = gated();
  const auto v = glukit::detail::half_width_view(p);
  CHECK(static_cast<const void*>(v.a) == static_cast<const void*>(p.a));
  CHECK(static_cast<const void*>(v.w) == static_cast<const void*>(p.w));
  CHECK(v.k == 2048);
  CHECK(v.lda == 2048);
  CHECK(v.ldw == 2056);
  CHECK(v.ldo == p.ldo);  // the output stays 16-bit
  CHECK(v.n == p.n);
  const auto e = glukit::detail::scale_operands(p, p.scale_w, p.scale_w_kind);
  CHECK(e.vectors.scale_a == floats);
  CHECK(e.vectors.scale_a_step == 1);  // per row
  CHECK(e.vectors.scale_b == floats + 4);
  CHECK(e.vectors.scale_b_step == 0);  // per tensor
  const auto va = glukit::detail::half_width_view(addmm());
  CHECK(va.b_layout == glukit::Layout::col_major);
  CHECK(va.ldb == 512);
  CHECK(va.ldy == 21568);
  STATIC_REQUIRE(glukit::ScaledProblem<glukit::bfloat16_t>::scaled);
  STATIC_REQUIRE(glukit::ScaledProblem<glukit::bfloat16_t>::b_k_major);
  STATIC_REQUIRE(std::is_same_v<glukit::GatedScaledProblem<glukit::half_t, glukit::GateLayout::stacked>::operand,
                                glukit::float8_e4m3_t>);
  STATIC_REQUIRE(glukit::GatedScaledProblem<glukit::half_t, glukit::GateLayout::stacked>::gated);
  STATIC_REQUIRE(!glukit::Problem<glukit::half_t, glukit::Layout::col_major>::scaled);
}

TEST_CASE("fp8 output: row_absmax's rule and quantize_rows' rules name their argument") {
  auto p = gated();
  p.row_absmax = floats + 8;
  CHECK(glukit::validate_gated_arguments(p).ok());
  p.n = 14332;  // not whole 16-byte chunks of the output
  CHECK(starts_with(message_of(p), "n:"));
  p = gated(), p.row_absmax = reinterpret_cast<float*>(bytes + 2);
  CHECK(starts_with(message_of(p), "row_absmax:"));
  STATIC_REQUIRE(glukit::epilogue::Arity<glukit::composition_of<glukit::Bound<
                     glukit::policy::GatedTma128x256<glukit::arch::sm90a>,
                     glukit::GatedScaledProblem<glukit::bfloat16_t, glukit::GateLayout::stacked, true>>>>::row_absmax == 0);
  STATIC_REQUIRE(glukit::epilogue::Arity<glukit::composition_of<glukit::Bound<
                     glukit::policy::GatedTma128x256<glukit::arch::sm90a>,
                     glukit::GatedScaledProblem<glukit::bfloat16_t, glukit::GateLayout::stacked>>>>::row_absmax == -1);

  glukit::QuantizeRowsArgsT<glukit::bfloat16_t> q;
  q.x = halves, q.absmax = floats, q.scale = floats + 4, q.q = reinterpret_cast<glukit::float8_e4m3_t*>(bytes);
  q.m = 4096, q.n = 14336, q.ldx = 14336, q.ldq = 14336;
  CHECK(glukit::validate_quantize_rows(q).ok());
  const auto msg = [](const auto& a) { return std::string(glukit::validate_quantize_rows(a).message()); };
  auto b = q;
  b.n = 14330;
  CHECK(starts_with(msg(b), "n:"));
  b = q, b.ldx = 14330;
  CHECK(starts_with(msg(b), "ldx:"));
  b = q, b.ldq = 14332;
  CHECK(starts_with(msg(b), "ldq:"));
  b = q, b.q = reinterpret_cast<glukit::float8_e4m3_t*>(bytes + 4);
  CHECK(starts_with(msg(b), "q:"));
  b = q, b.x = halves + 1;
  CHECK(starts_with(msg(b), "x:"));
  b = q, b.absmax = nullptr;  // the row maxima are then found by the kernel
  CHECK(glukit::validate_quantize_rows(b).ok());
  b = q, b.scale = nullptr;
  CHECK(starts_with(msg(b), "scale:"));
  b = q, b.m = 0;
  CHECK(glukit::validate_quantize_rows(b).ok());
}

TEST_CASE("fp8 encodings: each chip's e4m3 type, the FNUZ arguments' rules and view") {
  using glukit::Fp8Format;
  STATIC_REQUIRE(std::is_same_v<glukit::fp8_of_arch<glukit::arch::sm90a>, glukit::float8_e4m3_t>);
  STATIC_REQUIRE(std::is_same_v<glukit::fp8_of_arch<glukit::arch::gfx950>, glukit::float8_e4m3_t>);
  STATIC_REQUIRE(std::is_same_v<glukit::fp8_of_arch<glukit::arch::gfx942>, glukit::float8_e4m3fnuz_t>);
  STATIC_REQUIRE(glukit::fp8_format_of<glukit::float8_e4m3_t> == Fp8Format::e4m3);
  STATIC_REQUIRE(glukit::fp8_format_of<glukit::float8_e4m3fnuz_t> == Fp8Format::e4m3_fnuz);
  STATIC_REQUIRE(glukit::fp8_format_of_arch<glukit::arch::gfx942> == Fp8Format::e4m3_fnuz);
  STATIC_REQUIRE(std::is_same_v<glukit::ScaledProblem<glukit::half_t, glukit::float8_e4m3fnuz_t>::operand,
                                glukit::float8_e4m3fnuz_t>);
  STATIC_REQUIRE(std::is_same_v<glukit::GatedScaledProblem<glukit::bfloat16_t, glukit::GateLayout::interleaved, true,
                                                           glukit::float8_e4m3fnuz_t>::operand,
                                glukit::float8_e4m3fnuz_t>);
  // The same bits, a different number: 0x7e is 448 in OCP e4m3 and 224 in FNUZ; 0x80 is -0 and NaN.
  CHECK(glukit::fp8_to_float<Fp8Format::e4m3>(glukit::fp8_code(glukit::fp8_from_code(0x7e))) == 448.0f);
  CHECK(glukit::fp8_to_float<Fp8Format::e4m3_fnuz>(
            glukit::fp8_code(glukit::fp8_from_code<glukit::float8_e4m3fnuz_t>(0x7e))) == 224.0f);
  CHECK(std::isnan(glukit::fp8_to_float<Fp8Format::e4m3_fnuz>(0x80)));
  CHECK(glukit::float_to_fp8<Fp8Format::e4m3_fnuz>(1000.0f) == 0x7f);  // saturates at 240

  // FNUZ arguments follow the same rules and view (the bytes are the kernel's to read).
  glukit::GatedProjectionFp8ArgsT<glukit::bfloat16_t, glukit::float8_e4m3fnuz_t> p;
  const auto o = gated();
  p.a = reinterpret_cast<const glukit::float8_e4m3fnuz_t*>(o.a);
  p.w = reinterpret_cast<const glukit::float8_e4m3fnuz_t*>(o.w);
  p.scale_a = o.scale_a, p.scale_w = o.scale_w, p.bias = o.bias, p.out = o.out;
  p.m = o.m, p.n = o.n, p.k = o.k, p.lda = o.lda, p.ldw = o.ldw, p.ldo = o.ldo;
  CHECK(glukit::validate_gated_arguments(p).ok());
  CHECK(glukit::detail::half_width_view(p).k == 2048);
  p.ldw = 4104;
  CHECK(starts_with(message_of(p), "ldw:"));
  glukit::AddmmGluFp8ArgsT<glukit::half_t, glukit::float8_e4m3fnuz_t> x;
  CHECK(glukit::validate_arguments(x).ok());  // m = n = 0
  x.m = 4, x.n = 8, x.k = 24;
  CHECK(starts_with(message_of(x), "k:"));
}
