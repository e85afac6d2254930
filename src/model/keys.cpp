#include "model/keys.hpp"

#include "base/numbers.hpp"
#include "model/model.hpp"

#include <cmath>
#include <stdexcept>

namespace qkv {

namespace {

constexpr NumberKey k_number_keys[] = {
#define QKV_NUMBER_KEY(name, form, flag, member, feeds, help, sentence, meaning) {&Model::member, flag, help, sentence},
#include "model/keys.def"
    {nullptr, "", "", ""},  // so that the list is never empty
};

// The number key `name`'s parts: its place among the number keys.
constexpr const NumberKey* number_key(std::string_view name) {
    std::size_t index = 0;
    for (const std::string_view key : {
#define QKV_NUMBER_KEY(name, form, flag, member, feeds, help, sentence, meaning) std::string_view(#name),
#include "model/keys.def"
             std::string_view()}) {
        if (key == name) {
            return &k_number_keys[index];
        }
        ++index;
    }
    return nullptr;
}

constexpr KeyRow k_key_rows[] = {
#define QKV_KEY(name, kind, stage, read, json, sheet, feeds, form, italic, meaning) \
    {Key::name, #name, KeyForm::kind, KeyStage::stage, form, italic, meaning, false, nullptr},
#define QKV_KEY_FORM(name, kind, form, italic, meaning) \
    {Key::name, #name, KeyForm::kind, KeyStage::always, form, italic, meaning, true, nullptr},
#define QKV_NUMBER_KEY(name, form, flag, member, feeds, help, sentence, meaning) \
    {Key::name, #name, KeyForm::number, KeyStage::always, form, true, meaning, false, number_key(#name)},
#include "model/keys.def"
};

}  // namespace

std::span<const KeyRow> key_rows() { return k_key_rows; }

const KeyRow& key_row(Key key) {
    for (const KeyRow& row : k_key_rows) {
        if (row.key == key) {
            return row;
        }
    }
    throw std::logic_error("a key without a row");
}

const std::vector<std::string>& key_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> result;
        for (const KeyRow& row : k_key_rows) {
            if (!row.another_form) {
                result.emplace_back(row.name);
            }
        }
        return result;
    }();
    return names;
}

std::vector<const KeyRow*> number_key_rows() {
    std::vector<const KeyRow*> rows;
    for (const KeyRow& row : k_key_rows) {
        if (row.number != nullptr) {
            rows.push_back(&row);
        }
    }
    return rows;
}

std::optional<std::string> number_key_problem(double value) {
    if (!std::isfinite(value) || value < 1e-30 || value > 1e30) {
        return shortest(value) + (value <= 0.0 ? " is not positive" : " is outside 1e-30 to 1e30");
    }
    return std::nullopt;
}

std::string number_key_sentence(const KeyRow& row, const std::string& number) {
    std::string text(row.number->sentence);
    const std::size_t at = text.find("{}");
    return at == std::string::npos ? text : text.replace(at, 2, number);
}

}  // namespace qkv
