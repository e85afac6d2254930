// The rules of a lesson's script apart from its YAML (lesson/script.hpp):
// narration split at its braces, placeholders read into segments or refused
// with the reason, the steps a page may show and the cells block_size takes.
// The loader's positions for the same problems are tested in test_lesson.cpp.
#include "io/loader.hpp"
#include "lesson/script.hpp"
#include "lesson/skins.hpp"

#include <catch2/catch.hpp>

namespace {

using namespace qkv;

const std::vector<std::string> k_models = {"main", "other"};

Segment segment_of(const std::string& source, int page_model = 0) {
    auto read = read_placeholder(source, "script[1].say", k_models, page_model);
    REQUIRE(std::holds_alternative<Segment>(read));
    return std::get<Segment>(read);
}

ScriptProblem problem_of(const std::string& source) {
    auto read = read_placeholder(source, "script[1].say", k_models, 0);
    REQUIRE(std::holds_alternative<ScriptProblem>(read));
    return std::get<ScriptProblem>(read);
}

}  // namespace

TEST_CASE("narration is split into text and placeholders with doubled braces as braces", "[lesson]") {
    const auto parts = split_narration("a {{b}} is {scores[1,2]|2} and {d_k}.", "script[1].say");
    REQUIRE(parts.size() == 5);
    CHECK(parts[0].kind == NarrationPart::Kind::text);
    CHECK(parts[0].text == "a {b} is ");
    CHECK(parts[1].kind == NarrationPart::Kind::placeholder);
    CHECK(parts[1].text == "{scores[1,2]|2}");
    CHECK(parts[2].text == " and ");
    CHECK(parts[3].text == "{d_k}");
    CHECK(parts[4].text == ".");
}

TEST_CASE("an unpaired brace ends the narration with its problem", "[lesson]") {
    const auto closing = split_narration("one {d_k} then } here", "script[2].then");
    REQUIRE(closing.size() == 4);
    CHECK(closing.back().kind == NarrationPart::Kind::unpaired);
    CHECK(closing.back().text == "}");
    CHECK(closing.back().problem.what == "script[2].then: a } without its {");

    const auto opening = split_narration("the score {scores[1,2] is large", "script[3].say");
    REQUIRE(opening.size() == 2);
    CHECK(opening.back().kind == NarrationPart::Kind::unpaired);
    CHECK(opening.back().text == "{scores[1,2] is larg");  // the first 20 bytes
    CHECK(opening.back().problem.what == "script[3].say: a { without its }");
    CHECK_THAT(opening.back().problem.hint, Catch::Contains("{{"));
}

TEST_CASE("a placeholder names a cell or a size of its page's model or of a named one", "[lesson]") {
    const Segment cell = segment_of("{weights[2,3]@2|3}", 1);
    REQUIRE(cell.value);
    CHECK(cell.value->is_cell);
    CHECK(cell.value->model == 1);
    CHECK(cell.value->cell.step == StepId::weights);
    CHECK(cell.value->cell.row == 2);
    CHECK(cell.value->cell.col == 3);
    CHECK(cell.value->cell.head == 2);
    CHECK(cell.style.decimals == 3);
    CHECK_FALSE(cell.style.scientific);
    CHECK(cell.source == "{weights[2,3]@2|3}");

    const Segment size = segment_of("{other:d_k|e2}");
    REQUIRE(size.value);
    CHECK_FALSE(size.value->is_cell);
    CHECK(size.value->model == 1);
    CHECK(size.value->dimension == "d_k");
    CHECK(size.style.scientific);
    CHECK(size.style.decimals == 2);

    const Segment row = segment_of("{main:scores[1]}", 1);
    CHECK(row.value->model == 0);
    CHECK(row.value->cell.col == 0);
}

TEST_CASE("a placeholder that cannot be read says why", "[lesson]") {
    CHECK(problem_of("{scores[1,2]|x}").what == "script[1].say: {scores[1,2]|x} has the style \"x\"");
    CHECK(problem_of("{scores[1,2]|18}").what == "script[1].say: {scores[1,2]|18} has the style \"18\"");
    CHECK(problem_of("{scores[1,2]|}").what == "script[1].say: {scores[1,2]|} has an empty style after |");
    const ScriptProblem model = problem_of("{othr:scores[1,2]}");
    CHECK(model.what == "script[1].say: {othr:scores[1,2]} names the model \"othr\", which this lesson does not define");
    CHECK_THAT(model.hint, Catch::Contains("did you mean other?") && Catch::Contains("models: main, other"));
    const ScriptProblem size = problem_of("{d_kk}");
    CHECK(size.what == "script[1].say: {d_kk} is neither a cell nor a size");
    CHECK_THAT(size.hint, Catch::Contains("d_k"));
    CHECK_THAT(problem_of("{sores[1,2]}").what, Catch::StartsWith("script[1].say: {sores[1,2]}: "));
}

TEST_CASE("a page shows only the steps its model has", "[lesson]") {
    const Model model = load_model(read_source("illustrated"));
    const auto shown = shown_step("scores", "script[1].show", model, "main");
    REQUIRE(std::holds_alternative<StepId>(shown));
    CHECK(std::get<StepId>(shown) == StepId::scores);

    const auto unknown = shown_step("scroes", "script[1].show", model, "main");
    REQUIRE(std::holds_alternative<ScriptProblem>(unknown));
    CHECK(std::get<ScriptProblem>(unknown).what == "script[1].show: unknown step id \"scroes\"");
    CHECK_THAT(std::get<ScriptProblem>(unknown).hint, Catch::Contains("scores"));

    const auto absent = shown_step("rotated_queries", "script[1].show", model, "main");
    REQUIRE(std::holds_alternative<ScriptProblem>(absent));
    CHECK(std::get<ScriptProblem>(absent).what == "script[1].show: model main has no rotated_queries step");
}

TEST_CASE("block_size explains only the online softmax's cells", "[lesson]") {
    CHECK_FALSE(block_size_problem("weights[1,2]", "script[4]"));
    CHECK_FALSE(block_size_problem("other:head_output[2]", "script[4]"));
    // a cell that cannot be read is reported by explain's own check
    CHECK_FALSE(block_size_problem("nonsense", "script[4]"));
    const auto scores = block_size_problem("other:scores[1,2]", "script[4]");
    REQUIRE(scores);
    CHECK(scores->what ==
          "script[4].explain: scores[1,2] belongs to step scores; block_size explains weights and head_output cells");
}

TEST_CASE("the keys a lesson and a page may have and the names of models", "[lesson]") {
    CHECK(lesson_keys() == std::vector<std::string>{"title", "summary", "try", "model", "models", "script"});
    for (const std::string key : {"say", "show", "explain", "block_size", "then", "ask", "predict", "answer", "shape",
                                  "choose", "decimals", "tolerance", "pick", "reading", "head", "model"}) {
        CHECK(std::find(page_keys().begin(), page_keys().end(), key) != page_keys().end());
    }
    CHECK(is_model_name("small-2_b"));
    CHECK_FALSE(is_model_name("Small"));
    CHECK_FALSE(is_model_name(""));
}

TEST_CASE("filled-in narration becomes a document's spans: text, code and values", "[lesson]") {
    const std::string marked = marked_text({{"Query 1 is ", false}, {"[1, 0, 2]", true}, {"; run `qkv run x` now", false}});
    const std::vector<Span> spans = spans_of(marked);
    REQUIRE(spans.size() == 5);
    CHECK(spans[0].text == "Query 1 is ");
    CHECK(spans[0].kind == SpanKind::text);
    // a value's spaces come back as spaces: the writer keeps them together
    CHECK(spans[1].text == "[1, 0, 2]");
    CHECK(spans[1].kind == SpanKind::value);
    CHECK(spans[2].text == "; run ");
    CHECK(spans[3].text == "qkv run x");
    CHECK(spans[3].kind == SpanKind::code);
    CHECK(spans[4].text == " now");
    CHECK(spans[4].kind == SpanKind::text);
    // a code span left open ends with the text
    const std::vector<Span> open = spans_of("see `qkv lesson");
    REQUIRE(open.size() == 2);
    CHECK(open[1].text == "qkv lesson");
    CHECK(open[1].kind == SpanKind::code);
    // list items are paragraphs of their own
    CHECK(paragraphs_of("One\nline.\n- a\n- b\n\nTwo.") == std::vector<std::string>{"One line.", "- a", "- b", "Two."});
}
