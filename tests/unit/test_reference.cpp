// Every step of qkv against reference values computed independently with
// PyTorch (nn.MultiheadAttention where it applies, plain tensor ops otherwise),
// float64, at 1e-12. See tests/reference/README.md for how they were made.
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

using namespace qkv;

TEST_CASE("every step agrees with PyTorch's reference values to 1e-12", "[reference]") {
    const std::vector<std::string> cases = test::reference_cases();
    REQUIRE(cases.size() >= 36);
    for (const auto& name : cases) {
        CAPTURE(name);
        // at least queries, keys, values, scores, weights and head outputs for one head, and the output
        CHECK(test::require_reference(compute(test::load_reference_case(name)), name) >= 7);
    }
}
