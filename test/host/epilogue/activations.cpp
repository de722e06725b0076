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
#include <utility>
#include <vector>

#include "glukit/epilogue/activations.hpp"
#include "glukit/epilogue/functors.hpp"

namespace {

/// (epilogue operation, PyTorch name), one a line of the list.
using Entry = std::pair<std::string, std::string>;

#define GLUKIT_TEST_ENTRY(Op, name) Entry{#Op, #name},
const std::vector<Entry> kList = {GLUKIT_GATED_ACTIVATIONS(GLUKIT_TEST_ENTRY)};
#undef GLUKIT_TEST_ENTRY

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
  const std::vector<std::string> names = names_of(list);
  REQUIRE(names.size() == kList.size());
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(names[i] == kList[i].first);
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
  const std::regex entry(R"re(\n\s*"(\w+)":\s*GatedActivation\(\s*"(\w+)")re");
  std::vector<Entry> found;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), entry); it != std::sregex_iterator(); ++it)
    found.emplace_back((*it)[2].str(), (*it)[1].str());
  CHECK(found == kList);
}
