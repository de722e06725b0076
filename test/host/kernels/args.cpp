// Tests of ops/operands.hpp: the AddmmGluArgs members, Status, and every rule
// of validate_arguments (each broken rule gives a non-ok status whose message
// names the argument; the documented edge cases are accepted).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "glukit/ops/addmm_glu.hpp"

using glukit::AddmmGluArgs;
using glukit::half_t;
using glukit::Status;
using glukit::StatusCode;

static_assert(std::is_same_v<decltype(AddmmGluArgs::a), const half_t*>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::b), const half_t*>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::bias), const half_t*>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::y), const half_t*>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::out), half_t*>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::m), std::int64_t>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::n), std::int64_t>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::k), std::int64_t>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::lda), std::int64_t>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::ldb), std::int64_t>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::ldy), std::int64_t>);
static_assert(std::is_same_v<decltype(AddmmGluArgs::ldo), std::int64_t>);

namespace {

// Storage the argument pointers point into: validation never dereferences them,
// but real, 16-byte-aligned addresses keep the test honest.
alignas(16) half_t storage[64];

const half_t* at(int elems) { return storage + elems; }

/// A valid problem: the reference shape's N with ragged M, padded leading dims.
AddmmGluArgs valid() {
  AddmmGluArgs p;
  p.a = at(0);
  p.b = at(8);
  p.bias = at(16);
  p.y = at(24);
  p.out = storage + 32;
  p.m = 1000;
  p.n = 21568;
  p.k = 512;
  p.lda = 520;
  p.ldb = 21568;
  p.ldy = 21576;
  p.ldo = 21568;
  return p;
}

bool starts_with(const char* s, const std::string& prefix) {
  return s != nullptr && std::strncmp(s, prefix.c_str(), prefix.size()) == 0;
}

struct Rule {
  const char* what;
  std::function<void(AddmmGluArgs&)> breaks;
  std::string names;  // the message must start with "<names>:"
};

}  // namespace

TEST_CASE("Status") {
  const Status ok;
  CHECK(ok.ok());
  CHECK(static_cast<bool>(ok));
  CHECK(ok.code() == StatusCode::ok);
  CHECK(std::string(ok.message()) == "ok");
  CHECK(Status::success().ok());
  const Status bad = Status::invalid("lda: must be >= k");
  CHECK_FALSE(bad.ok());
  CHECK_FALSE(static_cast<bool>(bad));
  CHECK(bad.code() == StatusCode::invalid_argument);
  CHECK(std::string(bad.message()) == "lda: must be >= k");
  constexpr Status runtime{StatusCode::runtime_error, "launch failed"};
  STATIC_REQUIRE_FALSE(runtime.ok());
}

TEST_CASE("validate_arguments accepts a valid problem") {
  const Status s = glukit::validate_arguments(valid());
  INFO(s.message());
  CHECK(s.ok());
}

TEST_CASE("validate_arguments: every broken rule is reported with the argument's name") {
  const std::int64_t big = std::int64_t{1} << 31;
  const std::vector<Rule> rules{
      {"negative m", [](AddmmGluArgs& p) { p.m = -1; }, "m"},
      {"negative n", [](AddmmGluArgs& p) { p.n = -5; }, "n"},
      {"negative k", [](AddmmGluArgs& p) { p.k = -8; }, "k"},
      {"m too large", [&](AddmmGluArgs& p) { p.m = big; }, "m"},
      {"n too large", [&](AddmmGluArgs& p) { p.n = big; }, "n"},
      {"k too large", [&](AddmmGluArgs& p) { p.k = big; }, "k"},
      {"null a", [](AddmmGluArgs& p) { p.a = nullptr; }, "a"},
      {"null b", [](AddmmGluArgs& p) { p.b = nullptr; }, "b"},
      {"null y", [](AddmmGluArgs& p) { p.y = nullptr; }, "y"},
      {"null out", [](AddmmGluArgs& p) { p.out = nullptr; }, "out"},
      {"k not a multiple of 8", [](AddmmGluArgs& p) { p.k = 500; }, "k"},
      {"k = 1", [](AddmmGluArgs& p) { p.k = 1; }, "k"},
      {"lda < k", [](AddmmGluArgs& p) { p.lda = 504; }, "lda"},
      {"ldb < n", [](AddmmGluArgs& p) { p.ldb = 21560; }, "ldb"},
      {"ldy < n", [](AddmmGluArgs& p) { p.ldy = 100; }, "ldy"},
      {"ldo < n", [](AddmmGluArgs& p) { p.ldo = 0; }, "ldo"},
      {"negative ldo", [](AddmmGluArgs& p) { p.ldo = -21568; }, "ldo"},
      {"lda not a multiple of 8", [](AddmmGluArgs& p) { p.lda = 513; }, "lda"},
      {"ldb not a multiple of 8", [](AddmmGluArgs& p) { p.ldb = 21569; }, "ldb"},
      {"ldy not a multiple of 8", [](AddmmGluArgs& p) { p.ldy = 21570; }, "ldy"},
      {"ldo not a multiple of 8", [](AddmmGluArgs& p) { p.ldo = 21572; }, "ldo"},
      {"a misaligned", [](AddmmGluArgs& p) { p.a = at(1); }, "a"},
      {"b misaligned", [](AddmmGluArgs& p) { p.b = at(4); }, "b"},
      {"bias misaligned", [](AddmmGluArgs& p) { p.bias = at(2); }, "bias"},
      {"y misaligned", [](AddmmGluArgs& p) { p.y = at(7); }, "y"},
      {"out misaligned", [](AddmmGluArgs& p) { p.out = storage + 33; }, "out"},
      {"lda too large", [&](AddmmGluArgs& p) { p.lda = big; }, "lda"},
      {"ldb too large", [&](AddmmGluArgs& p) { p.ldb = big; }, "ldb"},
      {"ldy too large", [&](AddmmGluArgs& p) { p.ldy = big; }, "ldy"},
      {"ldo too large", [&](AddmmGluArgs& p) { p.ldo = big; }, "ldo"},
      {"m * ldo overflows", [&](AddmmGluArgs& p) { p.m = big - 1; p.ldo = big - 8; }, "ldo"},
  };
  for (const Rule& r : rules) {
    AddmmGluArgs p = valid();
    r.breaks(p);
    const Status s = glukit::validate_arguments(p);
    INFO(r.what << ": \"" << s.message() << "\"");
    CHECK_FALSE(s.ok());
    CHECK(s.code() == StatusCode::invalid_argument);
    CHECK(starts_with(s.message(), r.names + ":"));
  }
}

TEST_CASE("validate_arguments: documented edge cases are valid") {
  SECTION("m = 0 is a no-op, even with null pointers") {
    AddmmGluArgs p;
    p.n = 64;
    p.k = 64;
    CHECK(glukit::validate_arguments(p).ok());
  }
  SECTION("n = 0 is a no-op") {
    AddmmGluArgs p = valid();
    p.n = 0;
    p.out = nullptr;
    CHECK(glukit::validate_arguments(p).ok());
  }
  SECTION("k = 0: out = epilogue(bias, y); a and b and their leading dimensions are unused") {
    AddmmGluArgs p = valid();
    p.k = 0;
    p.a = nullptr;
    p.b = nullptr;
    p.lda = 0;
    p.ldb = 3;
    const Status s = glukit::validate_arguments(p);
    INFO(s.message());
    CHECK(s.ok());
  }
  SECTION("bias = null means no bias") {
    AddmmGluArgs p = valid();
    p.bias = nullptr;
    CHECK(glukit::validate_arguments(p).ok());
  }
  SECTION("leading dimensions equal to the row length") {
    AddmmGluArgs p = valid();
    p.lda = p.k;
    p.ldy = p.n;
    CHECK(glukit::validate_arguments(p).ok());
  }
  SECTION("ragged m and n, k a multiple of 8") {
    AddmmGluArgs p = valid();
    p.m = 1;
    p.n = 1;
    p.k = 8;
    p.lda = 8;
    p.ldb = 8;
    p.ldy = 8;
    p.ldo = 8;
    CHECK(glukit::validate_arguments(p).ok());
  }
  SECTION("the constants behind the rules") {
    STATIC_REQUIRE(glukit::vector_elems == 8);
    STATIC_REQUIRE(glukit::max_dimension == (std::int64_t{1} << 31));
  }
}

TEST_CASE("AddmmGluArgsT: bf16 problems, and the fp16 alias keeps today's fields") {
  STATIC_REQUIRE(std::is_same_v<AddmmGluArgs, glukit::AddmmGluArgsT<half_t>>);
  STATIC_REQUIRE(std::is_same_v<decltype(glukit::AddmmGluArgsT<glukit::bfloat16_t>::b), const glukit::bfloat16_t*>);
  STATIC_REQUIRE(std::is_same_v<decltype(glukit::AddmmGluArgsT<glukit::bfloat16_t>::out), glukit::bfloat16_t*>);
  // Today's aggregate initialisation, positional, still compiles and leaves B row-major.
  const AddmmGluArgs p{at(0), at(8), at(16), at(24), storage + 32, 4, 16, 8, 8, 16, 16, 16};
  CHECK(p.b_layout == glukit::Layout::row_major);
  CHECK(glukit::validate_arguments(p).ok());

  alignas(16) static glukit::bfloat16_t bstore[64];
  glukit::AddmmGluArgsT<glukit::bfloat16_t> q{bstore, bstore + 8, nullptr, bstore + 16, bstore + 32,
                                               3, 16, 8, 8, 16, 16, 16};
  CHECK(glukit::validate_arguments(q).ok());
  q.lda = 4;
  const Status s = glukit::validate_arguments(q);
  CHECK(s.code() == StatusCode::invalid_argument);
  CHECK(starts_with(s.message(), "lda:"));
  q.lda = 8;
  q.b = bstore + 1;
  CHECK(starts_with(glukit::validate_arguments(q).message(), "b:"));
}

TEST_CASE("validate_arguments: B as n x k (b_layout = col_major)") {
  AddmmGluArgs p = valid();
  p.b_layout = glukit::Layout::col_major;
  p.ldb = p.k;  // rows of B are k long now
  CHECK(glukit::validate_arguments(p).ok());
  SECTION("ldb >= k, not >= n") {
    p.ldb = p.k - 8;
    const Status s = glukit::validate_arguments(p);
    CHECK_FALSE(s.ok());
    CHECK(starts_with(s.message(), "ldb:"));
    CHECK(std::string(s.message()).find(">= k") != std::string::npos);
  }
  SECTION("the row-major rule ldb >= n does not apply") {
    p.ldb = p.k + 8;  // far below n = 21568
    CHECK(glukit::validate_arguments(p).ok());
  }
  SECTION("ldb a multiple of 8") {
    p.ldb = p.k + 1;
    CHECK(starts_with(glukit::validate_arguments(p).message(), "ldb:"));
  }
  SECTION("n * ldb must not overflow") {
    p.n = (std::int64_t{1} << 31) - 8;
    p.ldo = p.ldy = p.n;
    p.m = 1;
    p.ldb = (std::int64_t{1} << 31) - 8;
    const Status s = glukit::validate_arguments(p);
    CHECK_FALSE(s.ok());
    CHECK(starts_with(s.message(), "ldb:"));
  }
  SECTION("row-major with the same ldb is refused (ldb < n)") {
    p.b_layout = glukit::Layout::row_major;
    CHECK(starts_with(glukit::validate_arguments(p).message(), "ldb:"));
  }
  SECTION("a layout value outside the enum") {
    p.b_layout = static_cast<glukit::Layout>(7);
    CHECK(starts_with(glukit::validate_arguments(p).message(), "b_layout:"));
  }
}

TEST_CASE("validate_arguments: an epilogue that does not read Y takes a null y") {
  AddmmGluArgs p = valid();
  p.y = nullptr;
  p.ldy = 0;
  CHECK(starts_with(glukit::validate_arguments(p).message(), "y:"));          // read: y required
  CHECK(glukit::validate_arguments(p, /*reads_aux=*/false).ok());              // not read: ignored
  p.y = at(3);                                                                 // misaligned, unread
  CHECK(glukit::validate_arguments(p, false).ok());
  p.out = storage + 33;                                                        // the rest still holds
  CHECK(starts_with(glukit::validate_arguments(p, false).message(), "out:"));
}
