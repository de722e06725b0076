// Tests of epilogue/activations.hpp: GatedActivations is its list, in its order, each a
// gated activation (functors.hpp's GatedActivationOp); and the PyTorch layer's table
// (python/glukit/ops.py, GATED_ACTIVATIONS) names the same activations with the same
// epilogue operations in the same order. The extension's launchers are generated from the
// list, ops.py's torch formulas are written beside it: this keeps the two from drifting in
// every CI run (python.cpu copies python/ alone, without the header).
#include <catch2/catch.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "glukit/epilogue/activations.hpp"
#include "glukit/epilogue/functors.hpp"

namespace {

/// "Op name": an epilogue operation and its PyTorch name, one a line of the list.
std::string entry(const std::string& op, const std::string& name) { return op + " " + name; }

#define GLUKIT_TEST_ENTRY(Op, name) entry(#Op, #name),
const std::vector<std::string> kList = {GLUKIT_GATED_ACTIVATIONS(GLUKIT_TEST_ENTRY)};
#undef GLUKIT_TEST_ENTRY
#define GLUKIT_TEST_OP(Op, name) #Op,
const std::vector<std::string> kOps = {GLUKIT_GATED_ACTIVATIONS(GLUKIT_TEST_OP)};
#undef GLUKIT_TEST_OP

template <class... Ops>
std::vector<std::string> names_of(const std::tuple<Ops...>&) {
  return {Ops::name()...};
}

template <class... Ops>
constexpr bool all_gated(const std::tuple<Ops...>&) {
  return (glukit::GatedActivationOp<Ops> && ...);
}

/// The path of python/glukit/ops.py, from this file's (test/host/epilogue/activations.cpp).
std::filesystem::path ops_py() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path() / "python" /
         "glukit" / "ops.py";
}

}  // namespace

TEST_CASE("GatedActivations is the list, in its order, each a gated activation", "[activations]") {
  const glukit::epilogue::GatedActivations list{};
  STATIC_REQUIRE(all_gated(list));
  CHECK(names_of(list) == kOps);
}

TEST_CASE("glukit.ops' GATED_ACTIVATIONS names the list's activations and operations, in its order",
          "[activations]") {
  const std::filesystem::path path = ops_py();
  INFO("reading " << path.string());
  std::ifstream in(path);
  REQUIRE(in.good());
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // The table: GATED_ACTIVATIONS = {\n    "name": GatedActivation("Op", act, grad),\n ... }
  const std::size_t begin = text.find("\nGATED_ACTIVATIONS = {");
  REQUIRE(begin != std::string::npos);
  const std::size_t end = text.find("\n}", begin);
  REQUIRE(end != std::string::npos);
  const std::string table = text.substr(begin, end - begin);
  const std::regex line(R"re(\n\s*"(\w+)":\s*GatedActivation\(\s*"(\w+)")re");
  std::vector<std::string> found;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), line); it != std::sregex_iterator(); ++it)
    found.push_back(entry((*it)[2].str(), (*it)[1].str()));
  CHECK(found == kList);
}
