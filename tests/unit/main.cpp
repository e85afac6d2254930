// The test runner, and a listener that keeps the tags of the running test case,
// so that what a test does can be checked against what its tags say: CTest's
// labels come from the tags (tests/catch_labels.cmake), and support.hpp's
// require_tag fails a test that starts qkv without [cli], say.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::vector<std::string> running_tags;
bool test_running = false;

struct TagListener : Catch::TestEventListenerBase {
    using TestEventListenerBase::TestEventListenerBase;
    void testRunStarting(const Catch::TestRunInfo& info) override {
        // a lesson wraps its text to COLUMNS: the golden files are 80 columns
        // wide whatever the shell that runs the tests exports
        unsetenv("COLUMNS");
        unsetenv("LINES");
        TestEventListenerBase::testRunStarting(info);
    }
    void testCaseStarting(const Catch::TestCaseInfo& info) override {
        running_tags = info.tags;
        test_running = true;
    }
    void testCaseEnded(const Catch::TestCaseStats& stats) override {
        running_tags.clear();
        test_running = false;
        TestEventListenerBase::testCaseEnded(stats);
    }
};

}  // namespace

CATCH_REGISTER_LISTENER(TagListener)

namespace qkv::test {

// Declared in support.hpp: the tags of the running test case, or nullptr outside one.
const std::vector<std::string>* running_test_tags() { return test_running ? &running_tags : nullptr; }

}  // namespace qkv::test
