// The .npy and safetensors readers (tensor_file.hpp).
//
// .npy (NumPy's format, versions 1 to 3): the bytes "\x93NUMPY", the version,
// the header's length (2 bytes, or 4 from version 2), then the header, a
// Python dict such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), },
// then the numbers.
// safetensors: the header's length (8 bytes, little-endian), the header, a
// JSON object from each tensor's name to {"dtype", "shape", "data_offsets"}
// (offsets into the numbers that follow the header), then the numbers,
// little-endian.
#include "io/tensor_file.hpp"

#include "base/diagnostics.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace qkv::loading {

namespace {

// A header larger than this is not one (safetensors' own readers refuse 100 MB).
constexpr std::uint64_t k_max_header = 100'000'000;

std::string read_bytes(std::istream& in, std::uint64_t at, std::uint64_t count, const std::string& what) {
    std::string bytes(count, '\0');
    in.clear();
    in.seekg(static_cast<std::streamoff>(at));
    in.read(bytes.data(), static_cast<std::streamsize>(count));
    if (!in || static_cast<std::uint64_t>(in.gcount()) != count) {
        throw TensorError("the file ends inside its " + what, "the file is truncated; copy or download it again");
    }
    return bytes;
}

std::uint64_t little_endian(const std::string& bytes, std::size_t at, int width) {
    std::uint64_t value = 0;
    for (int b = width - 1; b >= 0; --b) {
        value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(b)]);
    }
    return value;
}

// The kind and width of a dtype: NumPy's f8, f4, f2 or safetensors' F64, F32, F16, BF16.
bool set_kind(TensorLayout& layout, const std::string& type) {
    using Kind = TensorLayout::Kind;
    static const std::pair<const char*, std::pair<Kind, int>> k_kinds[] = {
        {"f8", {Kind::f64, 8}},  {"f4", {Kind::f32, 4}},  {"f2", {Kind::f16, 2}},
        {"F64", {Kind::f64, 8}}, {"F32", {Kind::f32, 4}}, {"F16", {Kind::f16, 2}}, {"BF16", {Kind::bf16, 2}}};
    for (const auto& [name, kind] : k_kinds) {
        if (type == name) {
            layout.kind = kind.first;
            layout.width = kind.second;
            return true;
        }
    }
    return false;
}

// A shape of one or two dimensions as rows × cols; anything else is an error.
void set_shape(TensorLayout& layout, const std::vector<std::uint64_t>& shape, const std::string& what) {
    std::string text;
    for (const std::uint64_t d : shape) {
        text += (text.empty() ? "" : " × ") + std::to_string(d);
    }
    if (shape.empty() || shape.size() > 2) {
        throw TensorError(what + " has " + std::to_string(shape.size()) + " dimensions (" +
                              (text.empty() ? "a single number" : text) + "); expected a matrix or a vector",
                          "give a tensor of one or two dimensions, or save the block you need as one");
    }
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
        throw TensorError(what + " is empty (" + text + "); expected numbers", "give a tensor that holds numbers");
    }
    // a tensor larger than any file could be: its numbers would overflow the offsets below
    constexpr std::uint64_t k_max_numbers = std::uint64_t{1} << 56;
    if (shape.size() == 2 ? shape[0] > k_max_numbers / shape[1] : shape[0] > k_max_numbers) {
        throw TensorError(what + " is " + text + ", more numbers than any file holds",
                          "the file is damaged; save it again");
    }
    layout.dimensions = static_cast<int>(shape.size());
    layout.rows = shape.size() == 1 ? 1 : shape[0];
    layout.cols = shape.back();
}

// The bits of a number as the number (std::bit_cast, which the page's C++ library lacks).
template <typename To, typename From>
To from_bits(From bits) {
    static_assert(sizeof(To) == sizeof(From));
    To value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

// The number at `bytes[at]`, widened exactly.
double widen(const TensorLayout& layout, const std::string& bytes, std::size_t at) {
    std::uint64_t bits = 0;
    for (int b = 0; b < layout.width; ++b) {
        const int from = layout.big_endian ? b : layout.width - 1 - b;
        bits = (bits << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(from)]);
    }
    switch (layout.kind) {
        case TensorLayout::Kind::f64:
            return from_bits<double>(bits);
        case TensorLayout::Kind::f32:
            return static_cast<double>(from_bits<float>(static_cast<std::uint32_t>(bits)));
        case TensorLayout::Kind::bf16:
            // the upper half of a float32
            return static_cast<double>(from_bits<float>(static_cast<std::uint32_t>(bits << 16)));
        case TensorLayout::Kind::f16: {
            const double sign = (bits & 0x8000U) != 0 ? -1.0 : 1.0;
            const int exponent = static_cast<int>((bits >> 10) & 0x1fU);
            const double mantissa = static_cast<double>(bits & 0x3ffU);
            if (exponent == 0x1f) {
                return mantissa == 0.0 ? sign * std::numeric_limits<double>::infinity()
                                       : std::numeric_limits<double>::quiet_NaN();
            }
            // subnormal: m·2^−24; normal: (1024 + m)·2^(e − 25)
            return exponent == 0 ? sign * std::ldexp(mantissa, -24)
                                 : sign * std::ldexp(1024.0 + mantissa, exponent - 25);
        }
    }
    return 0.0;
}

// The value of key `key` in a .npy header's dict, as written: "'<f4'", "False", "(3, 4)".
std::string npy_value(const std::string& header, const std::string& key) {
    const std::size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) {
        throw TensorError("the .npy header has no '" + key + "'", "write the file with numpy.save");
    }
    std::size_t start = header.find(':', at);
    if (start == std::string::npos) {
        throw TensorError("the .npy header's '" + key + "' has no value", "write the file with numpy.save");
    }
    start = header.find_first_not_of(' ', start + 1);
    const char open = start == std::string::npos ? '\0' : header[start];
    const std::size_t end = open == '(' ? header.find(')', start) + 1
                            : open == '\'' ? header.find('\'', start + 1) + 1
                                           : header.find_first_of(",}", start);
    if (start == std::string::npos || end == std::string::npos || end == 0 || end <= start) {
        throw TensorError("the .npy header's '" + key + "' cannot be read", "write the file with numpy.save");
    }
    return header.substr(start, end - start);
}

}  // namespace

TensorLayout npy_layout(std::istream& in, std::uint64_t size) {
    const std::string magic = read_bytes(in, 0, std::min<std::uint64_t>(size, 10), "header");
    if (magic.size() < 10 || magic.compare(0, 6, "\x93NUMPY") != 0) {
        throw TensorError("the file is not a .npy file (it does not start with \\x93NUMPY)",
                          "write it with numpy.save, or give a .csv or .safetensors file");
    }
    const int major = static_cast<unsigned char>(magic[6]);
    if (major < 1 || major > 3) {
        throw TensorError("the .npy file is of version " + std::to_string(major) + "; expected 1, 2 or 3",
                          "write it again with numpy.save");
    }
    const int length_bytes = major == 1 ? 2 : 4;
    const std::string length = read_bytes(in, 8, static_cast<std::uint64_t>(length_bytes), "header");
    const std::uint64_t header_size = little_endian(length, 0, length_bytes);
    const std::uint64_t start = 8 + static_cast<std::uint64_t>(length_bytes);
    if (header_size > k_max_header) {
        throw TensorError("the .npy header says it is " + std::to_string(header_size) + " bytes long",
                          "the file is damaged; write it again with numpy.save");
    }
    const std::string header = read_bytes(in, start, header_size, "header");
    TensorLayout layout;
    layout.offset = start + header_size;
    std::string descr = npy_value(header, "descr");
    descr = descr.size() >= 2 ? descr.substr(1, descr.size() - 2) : descr;
    const char order = descr.empty() ? '\0' : descr[0];
    if ((order != '<' && order != '>' && order != '=') || !set_kind(layout, descr.substr(1))) {
        throw TensorError("the .npy file holds numbers of type " + descr + "; expected float64, float32 or float16",
                          "save it with .astype(numpy.float64) first");
    }
    layout.dtype = descr;
    layout.big_endian = order == '>' || (order == '=' && std::endian::native == std::endian::big);
    layout.column_major = npy_value(header, "fortran_order") == "True";
    const std::string shape_text = npy_value(header, "shape");
    std::vector<std::uint64_t> shape;
    for (std::size_t i = 1; i < shape_text.size();) {
        if (std::isdigit(static_cast<unsigned char>(shape_text[i])) != 0) {
            std::uint64_t size = 0;
            const auto [end, problem] = std::from_chars(shape_text.data() + i, shape_text.data() + shape_text.size(), size);
            if (problem != std::errc()) {
                throw TensorError("the .npy header's shape " + shape_text + " cannot be read",
                                  "the file is damaged; write it again with numpy.save");
            }
            shape.push_back(size);
            i = static_cast<std::size_t>(end - shape_text.data());
        } else {
            ++i;
        }
    }
    set_shape(layout, shape, "the .npy array");
    const std::uint64_t needed = layout.rows * layout.cols * static_cast<std::uint64_t>(layout.width);
    if (layout.offset > size || needed > size - layout.offset) {
        throw TensorError("the .npy file holds " + std::to_string(size - std::min(size, layout.offset)) +
                              " bytes of numbers; its shape needs " + std::to_string(needed),
                          "the file is truncated; copy or write it again");
    }
    return layout;
}

TensorLayout safetensors_layout(std::istream& in, std::uint64_t size, const std::string& name) {
    if (size < 8) {
        throw TensorError("the file is " + std::to_string(size) + " bytes long; a safetensors file starts with 8 "
                          "bytes that give its header's length",
                          "the file is truncated, or is not a safetensors file");
    }
    const std::uint64_t header_size = little_endian(read_bytes(in, 0, 8, "header"), 0, 8);
    if (header_size > k_max_header || header_size > size - 8) {
        throw TensorError("the safetensors header says it is " + std::to_string(header_size) + " bytes long, and "
                              "the file holds " + std::to_string(size - 8) + " after its first 8",
                          "the file is truncated, or is not a safetensors file");
    }
    const nlohmann::json header = nlohmann::json::parse(read_bytes(in, 8, header_size, "header"), nullptr, false);
    if (header.is_discarded() || !header.is_object()) {
        throw TensorError("the safetensors header is not a JSON object", "the file is damaged; save it again");
    }
    const auto found = header.find(name);
    if (found == header.end() || name == "__metadata__") {
        std::vector<std::pair<std::size_t, std::string>> names;
        for (const auto& [other, info] : header.items()) {
            if (other != "__metadata__") {
                names.emplace_back(edit_distance(name, other), other);
            }
        }
        std::sort(names.begin(), names.end());
        std::string closest;
        for (std::size_t i = 0; i < names.size() && i < 3; ++i) {
            closest += (closest.empty() ? "" : ", ") + names[i].second;
        }
        throw TensorError("the file has no tensor " + name + " (it has " + std::to_string(names.size()) +
                              (names.size() == 1 ? " tensor)" : " tensors)"),
                          closest.empty() ? "the file holds no tensors" : "the closest names: " + closest);
    }
    const nlohmann::json& info = *found;
    const std::string what = "the tensor " + name;
    TensorLayout layout;
    const auto dtype = info.is_object() ? info.find("dtype") : info.end();
    const auto shape = info.is_object() ? info.find("shape") : info.end();
    const auto offsets = info.is_object() ? info.find("data_offsets") : info.end();
    if (!info.is_object() || dtype == info.end() || !dtype->is_string() || shape == info.end() ||
        !shape->is_array() || offsets == info.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
        throw TensorError(what + " has no dtype, shape and data_offsets in the header",
                          "the file is damaged; save it again");
    }
    layout.dtype = dtype->get<std::string>();
    if (!set_kind(layout, layout.dtype)) {
        throw TensorError(what + " holds numbers of type " + layout.dtype + "; expected F64, F32, F16 or BF16",
                          "convert it to a floating-point type before saving");
    }
    std::vector<std::uint64_t> dims;
    for (const auto& d : *shape) {
        if (!d.is_number_unsigned()) {
            throw TensorError(what + "'s shape is not a list of sizes", "the file is damaged; save it again");
        }
        dims.push_back(d.get<std::uint64_t>());
    }
    set_shape(layout, dims, what);
    const std::uint64_t begin = (*offsets)[0].get<std::uint64_t>();
    const std::uint64_t end = (*offsets)[1].get<std::uint64_t>();
    const std::uint64_t data = 8 + header_size;
    if (end < begin || (end - begin) / static_cast<std::uint64_t>(layout.width) != layout.rows * layout.cols ||
        (end - begin) % static_cast<std::uint64_t>(layout.width) != 0) {
        throw TensorError(what + "'s data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                              "] do not hold its " + std::to_string(layout.rows * layout.cols) + " numbers",
                          "the file is damaged; save it again");
    }
    if (end > size - data) {
        throw TensorError(what + " ends at byte " + std::to_string(data + end) + " of a file of " +
                              std::to_string(size) + " bytes",
                          "the file is truncated; copy or download it again");
    }
    layout.offset = data + begin;
    return layout;
}

arma::mat read_tensor_block(std::istream& in, const TensorLayout& layout, std::uint64_t r0, std::uint64_t r1,
                            std::uint64_t c0, std::uint64_t c1) {
    const auto w = static_cast<std::uint64_t>(layout.width);
    arma::mat result(r1 - r0, c1 - c0);
    // one run of numbers at a time: a row's columns (C order), or a column's rows (Fortran order)
    const std::uint64_t runs = layout.column_major ? c1 - c0 : r1 - r0;
    const std::uint64_t length = layout.column_major ? r1 - r0 : c1 - c0;
    for (std::uint64_t k = 0; k < runs; ++k) {
        const std::uint64_t first = layout.column_major ? (c0 + k) * layout.rows + r0 : (r0 + k) * layout.cols + c0;
        const std::string bytes = read_bytes(in, layout.offset + first * w, length * w, "numbers");
        for (std::uint64_t e = 0; e < length; ++e) {
            const double value = widen(layout, bytes, static_cast<std::size_t>(e * w));
            if (layout.column_major) {
                result(e, k) = value;
            } else {
                result(k, e) = value;
            }
        }
    }
    return result;
}

}  // namespace qkv::loading
