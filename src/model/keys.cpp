#include "model/keys.hpp"

#include <sstream>

namespace qkv {

namespace {

constexpr KeyRow k_key_rows[] = {
#define QKV_KEY(name, form, italic, feeds, meaning) {Key::name, #name, form, italic, feeds, meaning, false},
#define QKV_KEY_FORM(name, form, italic, feeds, meaning) {Key::name, #name, form, italic, feeds, meaning, true},
#include "model/keys.def"
};

}  // namespace

std::span<const KeyRow> key_rows() { return k_key_rows; }

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

std::vector<std::string> key_feeds(const KeyRow& row) {
    std::istringstream words{std::string(row.feeds)};
    std::vector<std::string> ids;
    for (std::string id; words >> id;) {
        ids.push_back(id);
    }
    return ids;
}

}  // namespace qkv
