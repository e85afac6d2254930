// Grading: every answered cell against the true value and against the value
// worked out from the learner's own earlier answers (error carried forward).
#include "check/check.hpp"

#include "check/catalogue.hpp"
#include "check/diagnose.hpp"
#include "check/recompute.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <set>

namespace qkv {

namespace {

// Equal up to the last bits of a double (an answer that is the exact value).
bool same_value(double a, double b) {
    if (!std::isfinite(a) || !std::isfinite(b)) {
        return a == b;
    }
    return std::fabs(a - b) <= 1e-12 * std::max(1.0, std::fabs(b));
}

void add_unique(std::vector<std::string>& to, const std::vector<std::string>& from) {
    for (const auto& item : from) {
        if (std::find(to.begin(), to.end(), item) == to.end()) {
            to.push_back(item);
        }
    }
}

}  // namespace

const char* verdict_name(Verdict verdict) {
    switch (verdict) {
        case Verdict::right:
            return "right";
        case Verdict::wrong:
            return "wrong";
        case Verdict::consistent:
            return "consistent";
    }
    return "wrong";
}

double shown_slack(const CheckOptions& options, int decimals) {
    if (options.shown_decimals < 0 || decimals >= options.shown_decimals || options.shown_decimals > 17) {
        return 0.0;
    }
    return 0.5 * std::pow(10.0, -options.shown_decimals);
}

bool matches(double given, int decimals, double target, const CheckOptions& options, double slack) {
    if (std::isnan(given) || std::isnan(target)) {
        return false;
    }
    if (std::isinf(given) || std::isinf(target)) {
        return given == target;
    }
    double allowed = 0.0;
    if (options.tolerance) {
        allowed = *options.tolerance;
    } else if (decimals >= options.decimals) {
        allowed = 0.5 * std::pow(10.0, -decimals);
    } else {
        // fewer decimals than the exercise asks for: only the exact value (up to the last bits of a double)
        allowed = 1e-9 * std::max(1.0, std::fabs(target));
    }
    allowed += std::isfinite(slack) ? slack : 0.0;
    // slack for binary floating point: 0.45 is stored as 0.45000000000000001, and a tie must still count
    const double bits = allowed * 1e-9 + 4 * DBL_EPSILON * std::max(std::fabs(given), std::fabs(target));
    return std::fabs(given - target) <= allowed + bits;
}

int graded_decimals(int decimals, double given, double target, const CheckOptions& options) {
    if (options.tolerance || decimals >= options.decimals || !std::isfinite(target) ||
        matches(given, decimals, target, options)) {
        return decimals;
    }
    // a true value that these decimals write exactly (a whole score) may be written with them
    const double unit = std::pow(10.0, -decimals);
    if (same_value(std::round(target / unit) * unit, target)) {
        return decimals;
    }
    return options.decimals;
}

std::size_t StepCheck::count(Verdict verdict) const {
    return static_cast<std::size_t>(
        std::count_if(cells.begin(), cells.end(), [verdict](const CellCheck& cell) { return cell.verdict == verdict; }));
}

std::size_t StepCheck::blank() const { return step->values.n_elem - cells.size(); }

namespace {

// The earliest step holding a mistake, in the order of the step table (then by head), or nullptr.
const StepCheck* earliest_mistake(const std::vector<StepCheck>& steps) {
    const StepCheck* first = nullptr;
    for (const auto& step : steps) {
        if (!step.has_mistake()) {
            continue;
        }
        const StepKey order{step.answer->id, step.answer->head};
        if (first == nullptr || order < StepKey{first->answer->id, first->answer->head}) {
            first = &step;
        }
    }
    return first;
}

}  // namespace

bool CheckReport::correct() const {
    // nothing answered is not all right
    return !steps.empty() &&
           std::none_of(steps.begin(), steps.end(), [](const StepCheck& step) { return step.has_mistake(); });
}

const StepCheck* CheckReport::first_mistake() const { return earliest_mistake(steps); }

double CheckReport::score() const {
    double total = 0.0;
    for (const auto& step : steps) {
        total += step.score;
    }
    return total;
}

double CheckReport::max_score() const {
    double total = 0.0;
    for (const auto& step : steps) {
        total += step.max_score;
    }
    for (const auto& step : unanswered) {
        total += step.max_score;
    }
    return total;
}

std::string step_label(const Trace& trace, StepId id, int head) {
    if (head != 0 && trace.dims.heads > 1) {
        return step_text(id) + " (head " + std::to_string(head) + ")";
    }
    return step_text(id);
}

std::size_t StepAnswer::answered() const {
    return static_cast<std::size_t>(
        std::count_if(cells.begin(), cells.end(), [](const AnswerCell& cell) { return cell.given; }));
}

namespace {

// The verdicts, and the learner's work step by step in two versions: `learner`
// holds their numbers as written (rounded ones included), `precise` the same
// work done without rounding — their mistakes kept, their rounding undone —
// for learners who wrote rounded values but calculated on with the full ones.
struct Grading {
    CheckReport report;
    checking::Values learner;
    checking::Values precise;
    checking::Values rounding;  // how far the learner's value of each step may be off by their rounding
    std::set<StepKey> answered;
};

// More rounded cells than this in a step's inputs (a large example) and the
// learner's rounding is not carried into it: hand calculations are far smaller.
constexpr std::size_t k_max_rounded_inputs = 4096;

// How far each cell of `key`, worked out from the learner's values, may move
// because of the rounding in the values it reads: `spread` holds, per step and
// cell, half a unit of the learner's last decimal where they rounded (and what
// their rounding upstream carried into the cells they did not write). To first
// order: each rounded input moved by its spread, one at a time, the changes
// added up.
arma::mat carried_rounding(const Model& model, const StepKey& key, const checking::Values& learner,
                           const checking::Values& spread, const arma::mat& base) {
    arma::mat total(base.n_rows, base.n_cols, arma::fill::zeros);
    const auto inputs = step_inputs(model, key);
    std::size_t rounded = 0;
    for (const auto& input : inputs) {
        if (const auto found = spread.find(input); found != spread.end()) {
            rounded += arma::accu(*found->second > 0.0);
        }
    }
    if (rounded == 0 || rounded > k_max_rounded_inputs) {
        return total;
    }
    checking::Values values = learner;
    for (const auto& input : inputs) {
        const auto found = spread.find(input);
        if (found == spread.end()) {
            continue;
        }
        const arma::mat& H = *found->second;
        arma::mat moved = *learner.at(input);
        for (arma::uword k = 0; k < H.n_elem; ++k) {
            if (!(H(k) > 0.0) || !std::isfinite(moved(k))) {
                continue;
            }
            const double original = moved(k);
            arma::mat change(base.n_rows, base.n_cols, arma::fill::zeros);
            for (const double sign : {-1.0, 1.0}) {
                moved(k) = original + sign * H(k);
                values[input] = std::make_shared<const arma::mat>(moved);
                const auto value = checking::recompute(model, key, values);
                if (!value || value->n_rows != base.n_rows || value->n_cols != base.n_cols) {
                    continue;
                }
                arma::mat difference = arma::abs(*value - base);
                difference.elem(arma::find_nonfinite(difference)).zeros();  // blocked cells stay −∞
                change = arma::max(change, difference);
            }
            moved(k) = original;
            total += change;
        }
        values[input] = learner.at(input);
    }
    return total;
}

// What grading one step's cells found besides their verdicts.
struct CellsGraded {
    bool deviates = false;  // some given number is not the true value
    bool partial = false;   // some cell is left blank
};

// Grades each given cell of an answer of the right shape against the true
// value and against the values worked out from the learner's earlier answers
// (as written, allowing for their rounding, and without their rounding), and
// writes the learner's numbers into `as_written` and `unrounded` and their
// rounding into `rounding`, which the later steps read.
CellsGraded grade_cells(StepCheck& check, const arma::mat& from_learner, const arma::mat& from_precise,
                        const CheckOptions& options, arma::mat& as_written, arma::mat& unrounded, arma::mat& rounding) {
    const StepAnswer& answer = *check.answer;
    const arma::mat& expected = check.step->values;
    CellsGraded graded;
    for (arma::uword i = 0; i < answer.n_rows; ++i) {
        for (arma::uword j = 0; j < answer.n_cols; ++j) {
            const AnswerCell& cell = answer.at(i, j);
            if (!cell.given) {
                graded.partial = true;
                continue;
            }
            const double value = cell.value;
            const bool follows_precise = matches(value, cell.decimals, from_precise(i, j), options);
            Verdict verdict = Verdict::wrong;
            if (matches(value, cell.decimals, expected(i, j), options)) {
                verdict = Verdict::right;
            } else if (follows_precise ||
                       matches(value, cell.decimals, from_learner(i, j), options, check.carried_rounding(i, j))) {
                verdict = Verdict::consistent;
            }
            check.cells.push_back(
                {i, j, &cell, expected(i, j), verdict, graded_decimals(cell.decimals, value, expected(i, j), options),
                 std::nullopt});
            as_written(i, j) = value;
            if (verdict == Verdict::wrong) {
                unrounded(i, j) = value;
            } else if (follows_precise) {
                unrounded(i, j) = from_precise(i, j);
            } else {
                unrounded(i, j) = verdict == Verdict::right ? expected(i, j) : value;
            }
            const bool exact = same_value(value, expected(i, j));
            // a number written with the decimals asked for was rounded to them, unless it is exact;
            // one written with fewer claims to be exact
            rounding(i, j) = !exact && cell.decimals >= options.decimals ? 0.5 * std::pow(10.0, -cell.decimals) : 0.0;
            graded.deviates = graded.deviates || !exact;
        }
    }
    return graded;
}

// Grades `answers`, which are in the order of the trace.
Grading grade(const Model& model, const Trace& trace, const Answers& answers, const CheckOptions& options) {
    Grading grading;
    CheckReport& report = grading.report;
    report.answers_source = answers.source;
    report.options = options;

    std::map<StepKey, const StepAnswer*> answer_of;
    for (const auto& answer : answers.steps) {
        answer_of[{answer.id, answer.head}] = &answer;
    }

    checking::Values& learner = grading.learner;
    checking::Values& precise = grading.precise;
    checking::Values& spread = grading.rounding;
    std::set<StepKey>& answered = grading.answered;
    // The learner's own answers that differ from the true values and that each
    // step's value depends on, nearest first: "follows from your weights";
    // `errors` keeps those that differ by more than rounding.
    std::map<StepKey, std::vector<std::string>> sources;
    std::map<StepKey, std::vector<std::string>> errors;

    for (const auto& step : trace.steps) {
        const StepKey key{step.id, step.head};
        const arma::mat& expected = step.values;
        const arma::mat from_learner = checking::recompute(model, key, learner).value_or(expected);
        const arma::mat from_precise = checking::recompute(model, key, precise).value_or(expected);
        arma::mat rounding = carried_rounding(model, key, learner, spread, from_learner);
        std::vector<std::string> upstream;
        std::vector<std::string> upstream_errors;
        for (const auto& input : step_inputs(model, key)) {
            add_unique(upstream, sources[input]);
            add_unique(upstream_errors, errors[input]);
        }
        std::vector<std::string> own = upstream;
        std::vector<std::string> own_errors = upstream_errors;
        arma::mat as_written = from_learner;
        arma::mat unrounded = from_precise;

        if (const auto found = answer_of.find(key); found != answer_of.end()) {
            const StepAnswer& answer = *found->second;
            StepCheck check;
            check.answer = &answer;
            check.step = &step;
            check.shape_ok = answer.n_rows == expected.n_rows && answer.n_cols == expected.n_cols;
            // rows labelled as the inputs' (or the context's) rows are tokens
            const Step* inputs = trace.find(StepId::inputs, 0);
            const Step* context = trace.find(StepId::context, 0);
            check.token_rows = (inputs != nullptr && step.row_labels == inputs->row_labels) ||
                               (context != nullptr && step.row_labels == context->row_labels);
            check.carried_rounding = rounding;
            answered.insert(key);
            if (check.shape_ok) {
                const CellsGraded graded =
                    grade_cells(check, from_learner, from_precise, options, as_written, unrounded, rounding);
                if (check.count(Verdict::consistent) > 0) {
                    check.follows_rounding_only = upstream_errors.empty();
                    check.follows_from = check.follows_rounding_only ? upstream : upstream_errors;
                }
                const std::string label = step_label(trace, step.id, step.head);
                if (graded.deviates) {
                    own = {label};
                    if (graded.partial) {
                        add_unique(own, upstream);
                    }
                }
                // an error goes further: a wrong number, or one following from an earlier error (not from rounding)
                const bool errs = check.count(Verdict::wrong) > 0 ||
                                  (check.count(Verdict::consistent) > 0 && !upstream_errors.empty());
                if (errs) {
                    own_errors = {label};
                    if (graded.partial) {
                        add_unique(own_errors, upstream_errors);
                    }
                } else if (!graded.partial) {
                    own_errors.clear();  // every cell right: no error goes further
                }
            }
            report.steps.push_back(std::move(check));
        }
        sources[key] = std::move(own);
        errors[key] = std::move(own_errors);
        learner[key] = std::make_shared<const arma::mat>(std::move(as_written));
        precise[key] = std::make_shared<const arma::mat>(std::move(unrounded));
        spread[key] = std::make_shared<const arma::mat>(std::move(rounding));
    }

    // points: the rubric's, or 1 for every answered step
    const auto points_of = [&options](StepId id) {
        if (options.rubric.empty()) {
            return 1.0;
        }
        const auto found = options.rubric.find(step_text(id));
        return found == options.rubric.end() ? 0.0 : found->second;
    };
    for (auto& check : report.steps) {
        check.max_score = points_of(check.answer->id);
        const double earned = static_cast<double>(check.count(Verdict::right) + check.count(Verdict::consistent));
        check.score = check.shape_ok ? check.max_score * earned / static_cast<double>(check.step->values.n_elem) : 0.0;
    }
    for (const BlankStep& blank : answers.blank) {
        if (const Step* step = trace.find(blank.id, blank.head); step != nullptr) {
            report.blank_cells += step->values.n_elem;
        }
    }
    for (const auto& step : trace.steps) {
        if (!options.rubric.empty() && answered.count({step.id, step.head}) == 0 && points_of(step.id) > 0.0) {
            report.unanswered.push_back({step.id, step.head, points_of(step.id)});
        }
    }
    return grading;
}

}  // namespace

namespace {

// The most wrong cells of one step that get a diagnosis of their own: far more
// than anyone works by hand, and a bound on the search in a large answer.
constexpr std::size_t k_max_diagnosed_cells = 64;

// "scores[2,3]", "scores[2,3]@1" with several heads.
std::string cell_text(const Trace& trace, StepId id, int head, arma::uword row, arma::uword col) {
    std::string name = step_text(id) + "[" + std::to_string(row + 1) + "," + std::to_string(col + 1) + "]";
    return head != 0 && trace.dims.heads > 1 ? name + "@" + std::to_string(head) : name;
}

// The learner's number is the true value of another cell: of the same step
// (nearest first), or of a step it is worked from.
std::optional<Diagnosis> another_cell(const Model& model, const Trace& trace, const StepCheck& check,
                                      const CellCheck& cell, const CheckOptions& options) {
    const AnswerCell& given = *cell.answer;
    const StepKey key{check.answer->id, check.answer->head};
    const std::string name = cell_text(trace, key.id, key.head, cell.row, cell.col);
    const auto found = [&](const Step& step, arma::uword i, arma::uword j) {
        const double value = step.values(i, j);
        return std::isfinite(value) && matches(given.value, given.decimals, value, options) &&
               !matches(value, cell.decimals, cell.expected, options);
    };
    const auto named = [&](const Step& step, arma::uword i, arma::uword j) {
        return Diagnosis{checking::mistake_id("another_cell"),
                         "That number is " + cell_text(trace, step.id, step.head, i, j) + ", not " + name + ".",
                         name + " is worked as " + check.step->formula + ", in row " + std::to_string(cell.row + 1) +
                             " and column " + std::to_string(cell.col + 1),
                         ""};
    };
    // the same step: the same row or column first, then the rest, nearest first
    const Step& own = *check.step;
    std::optional<std::pair<arma::uword, arma::uword>> nearest;
    arma::uword best = 0;
    for (arma::uword i = 0; i < own.values.n_rows; ++i) {
        for (arma::uword j = 0; j < own.values.n_cols; ++j) {
            if ((i == cell.row && j == cell.col) || !found(own, i, j)) {
                continue;
            }
            const arma::uword distance = (i > cell.row ? i - cell.row : cell.row - i) +
                                         (j > cell.col ? j - cell.col : cell.col - j) +
                                         (i == cell.row || j == cell.col ? 0 : own.values.n_elem);
            if (!nearest || distance < best) {
                nearest = {i, j};
                best = distance;
            }
        }
    }
    if (nearest) {
        return named(own, nearest->first, nearest->second);
    }
    for (const StepKey& input : step_inputs(model, key)) {
        const Step* step = trace.find(input.id, input.head);
        if (step == nullptr) {
            continue;
        }
        for (arma::uword i = 0; i < step->values.n_rows; ++i) {
            for (arma::uword j = 0; j < step->values.n_cols; ++j) {
                if (found(*step, i, j)) {
                    return named(*step, i, j);
                }
            }
        }
    }
    return std::nullopt;
}

// The true value, written with fewer decimals than the exercise asks for.
std::optional<Diagnosis> too_few_decimals(const CellCheck& cell) {
    const AnswerCell& given = *cell.answer;
    const double unit = std::pow(10.0, -std::min(given.decimals, 300));
    if (given.expression || cell.decimals <= given.decimals || !std::isfinite(cell.expected) ||
        std::fabs(cell.expected - given.value) > 0.5 * unit * (1 + 1e-12)) {
        return std::nullopt;
    }
    const auto decimals = [](int n) { return std::to_string(n) + (n == 1 ? " decimal" : " decimals"); };
    return Diagnosis{checking::mistake_id("too_few_decimals"),
                     "That is the true value rounded to " + decimals(given.decimals) + ".",
                     "write it with at least " + decimals(cell.decimals), ""};
}

// The true value cut off at the answer's decimals, or rounded the wrong way
// (0.0 or 0.1 for 0.0634 at one decimal): a slip of rounding, which a single
// number that some mistake also gives must not be blamed on.
bool rounded_wrongly(const CellCheck& cell) {
    const AnswerCell& given = *cell.answer;
    if (given.expression || !std::isfinite(cell.expected) || given.decimals > 15) {
        return false;
    }
    const double unit = std::pow(10.0, -given.decimals);
    const double down = std::floor(cell.expected / unit) * unit;
    return std::fabs(given.value - down) <= 1e-9 * unit || std::fabs(given.value - (down + unit)) <= 1e-9 * unit;
}

// One wrong cell graded on its own, as a lesson grades a number: the true
// value with too few decimals; a rounding slip, which only the slips of
// rounding may explain (inputs rounded too early); the named mistakes that
// give it (the cell alone, so that one number is evidence enough); then
// another cell's value.
std::optional<Diagnosis> grade_cell(const Model& model, const Trace& trace, checking::Diagnoser& one_cell,
                                    const StepCheck& check, const CellCheck& cell, const CheckOptions& options) {
    if (auto short_of = too_few_decimals(cell)) {
        return short_of;
    }
    StepAnswer alone = *check.answer;
    for (AnswerCell& each : alone.cells) {
        each.given = false;
    }
    AnswerCell& only = alone.cells[cell.row * alone.n_cols + cell.col];
    only.given = true;
    StepCheck single = check;
    single.answer = &alone;
    single.cells = {cell};
    single.cells.front().answer = &only;
    single.cells.front().diagnosis.reset();
    single.diagnosis.reset();
    if (!options.tolerance && rounded_wrongly(cell)) {
        return one_cell.diagnose(single, false);
    }
    if (auto found = one_cell.diagnose(single)) {
        return found;
    }
    return another_cell(model, trace, check, cell, options);
}

}  // namespace

std::optional<Diagnosis> shape_mistake(const Model& model, const Step& step, arma::uword rows, arma::uword cols) {
    const arma::uword heads = model.n_heads();
    const arma::uword kv_heads = model.n_kv_heads();
    const arma::uword d_v = model.d_v();
    if (kv_heads == heads || step.values.n_cols != heads * d_v || rows != step.values.n_rows ||
        cols != kv_heads * d_v) {
        return std::nullopt;
    }
    const auto n = [](arma::uword k) { return std::to_string(k); };
    return Diagnosis{checking::mistake_id("kv_heads_counted"), "That counts the " + n(kv_heads) + " key/value heads.",
                     "each of the " + n(heads) + " query heads writes its own " + n(d_v) + " columns, so there are " +
                         n(heads) + " · " + n(d_v) + " = " + n(heads * d_v),
                     ""};
}

CheckReport check_answers(const Model& model, const Trace& trace, const Answers& answers, const CheckOptions& options) {
    Grading grading = grade(model, trace, answers, options);
    // name the classic mistake behind each wrong step, and behind each wrong cell on its own
    checking::Diagnoser diagnoser(model, trace, {&grading.learner, &grading.precise}, grading.answered, options,
                                  &grading.rounding);
    CheckOptions cell_options = options;
    cell_options.min_evidence = 1;
    // one cell is also tried from the true inputs, where the learner's own differ
    const checking::Values truth = checking::true_values(trace);
    bool differs = false;
    for (const auto& [key, own] : grading.learner) {
        const auto true_value = truth.find(key);
        differs = differs || (true_value != truth.end() && (own->n_rows != true_value->second->n_rows ||
                                                            own->n_cols != true_value->second->n_cols ||
                                                            arma::accu(*own != *true_value->second) != 0));
    }
    std::vector<const checking::Values*> versions{&grading.learner, &grading.precise};
    if (differs) {
        versions.push_back(&truth);
    }
    checking::Diagnoser one_cell(model, trace, versions, grading.answered, cell_options, &grading.rounding);
    for (auto& check : grading.report.steps) {
        if (!check.has_mistake()) {
            continue;
        }
        check.diagnosis = diagnoser.diagnose(check);
        if (!check.diagnosis && !check.shape_ok) {
            check.diagnosis = shape_mistake(model, *check.step, check.answer->n_rows, check.answer->n_cols);
        }
        std::size_t diagnosed = 0;
        for (auto& cell : check.cells) {
            if (cell.verdict == Verdict::wrong && diagnosed++ < k_max_diagnosed_cells) {
                cell.diagnosis = grade_cell(model, trace, one_cell, check, cell, options);
            }
        }
    }
    return std::move(grading.report);
}

std::optional<Diagnosis> diagnose_answer(const Model& model, const Trace& trace, const Answers& answers,
                                         StepId id, int head, const CheckOptions& options) {
    Grading grading = grade(model, trace, answers, options);
    checking::Diagnoser diagnoser(model, trace, {&grading.learner, &grading.precise}, grading.answered, options,
                                  &grading.rounding);
    for (const auto& check : grading.report.steps) {
        if (check.answer->id == id && check.answer->head == head) {
            return diagnoser.diagnose(check);
        }
    }
    return std::nullopt;
}

}  // namespace qkv
