// A model's own numbers (EXAMPLE FILES in man/qkv.1.in): any matrix or vector
// as {file: F.npy} or {file: F.safetensors, tensor: NAME}, with rows: and
// cols: for one block. The files are written here, byte by byte, by encoders
// of the two formats that share nothing with qkv's readers; each dtype is
// checked to widen exactly, and each bad file is one error at its {file: …}.
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace qkv;
using test::run_qkv;

namespace {

// A number's bytes, little-endian, or big-endian when asked.
template <typename T>
std::string bytes_of(T value, bool big_endian = false) {
    std::string bytes(sizeof value, '\0');
    std::memcpy(bytes.data(), &value, sizeof value);
    if (big_endian) {
        bytes = std::string(bytes.rbegin(), bytes.rend());
    }
    return bytes;
}

std::string doubles(const std::vector<double>& values, bool big_endian = false) {
    std::string out;
    for (const double v : values) {
        out += bytes_of(v, big_endian);
    }
    return out;
}

std::string floats(const std::vector<float>& values, bool big_endian = false) {
    std::string out;
    for (const float v : values) {
        out += bytes_of(v, big_endian);
    }
    return out;
}

// 16-bit patterns as they are stored (float16 or bfloat16), little-endian.
std::string halves(const std::vector<std::uint16_t>& bits) {
    std::string out;
    for (const std::uint16_t b : bits) {
        out += bytes_of(b);
    }
    return out;
}

// A .npy file as numpy.save writes it: magic, version, header length, a dict
// padded with spaces to a multiple of 64 bytes and ended by a newline, the data.
std::string npy(const std::string& descr, bool fortran, const std::string& shape, const std::string& data,
                int version = 1) {
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
    const std::size_t prefix = version == 1 ? 10 : 12;
    while ((prefix + dict.size() + 1) % 64 != 0) {
        dict += ' ';
    }
    dict += '\n';
    std::string out = "\x93NUMPY";
    out += static_cast<char>(version);
    out += '\0';
    if (version == 1) {
        out += bytes_of(static_cast<std::uint16_t>(dict.size()));
    } else {
        out += bytes_of(static_cast<std::uint32_t>(dict.size()));
    }
    return out + dict + data;
}

struct Tensor {
    std::string name;
    std::string dtype;
    std::vector<std::uint64_t> shape;
    std::string data;
};

// A safetensors file: the header's length (8 bytes), the JSON header padded with
// spaces to a multiple of 8, then each tensor's bytes in turn.
std::string safetensors(const std::vector<Tensor>& tensors) {
    nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
    std::string data;
    for (const Tensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.data.size()}}};
        data += t.data;
    }
    std::string text = header.dump();
    while (text.size() % 8 != 0) {
        text += ' ';
    }
    return bytes_of(static_cast<std::uint64_t>(text.size())) + text + data;
}

// qkv run - -f json in `folder`, params and steps, with stdin `yaml`.
nlohmann::json run_json(const std::string& folder, const std::string& yaml) {
    test::CliRun run;
    run.cwd = folder;
    run.args = {"run", "-", "-f", "json"};
    run.input = yaml;
    const auto result = run_qkv(run);
    INFO(result.err);
    REQUIRE(result.status == 0);
    return nlohmann::json::parse(result.out);
}

test::CliResult run_in(const std::string& folder, const std::string& yaml) {
    test::CliRun run;
    run.cwd = folder;
    run.args = {"run", "-"};
    run.input = yaml;
    return run_qkv(run);
}

void require_one_error(const test::CliResult& result, const std::string& where_what, const std::string& hint = "") {
    INFO("stderr: " << result.err);
    CHECK(result.status == 2);
    CHECK(result.err.rfind("qkv: error: " + where_what, 0) == 0);
    CHECK(test::count_of(result.err, "qkv: error: ") == 1);
    if (!hint.empty()) {
        CHECK(result.err.find("hint: " + hint) != std::string::npos);
    }
}

const char* const k_inputs = "inputs: [[1, 0, 2], [0, 1, -1]]\n";

}  // namespace

TEST_CASE("a .npy matrix or vector is read exactly, in either byte order, memory order and version",
          "[inputs][files][cli]") {
    test::TempDir dir;
    // W_Q: float64, little-endian, C order; W_K: float32, big-endian, Fortran order (stored column by
    // column); W_V: float16 with a subnormal (2^−24) and a negative; b_Q: a vector, version 2
    dir.write("q.npy", npy("<f8", false, "(3, 2)", doubles({0.1, -2.0, 1.0 / 3.0, 0.0, 5e-9, 7.0})));
    dir.write("k.npy", npy(">f4", true, "(3, 2)", floats({0.5f, -1.25f, 2.0f, 0.375f, 0.1f, -3.0f}, true)));
    dir.write("v.npy", npy("<f2", false, "(3, 2)", halves({0x3C00, 0xC500, 0x0001, 0x3555, 0x7BFF, 0x0000})));
    dir.write("bq.npy", npy("<f8", false, "(2,)", doubles({0.25, -0.5}), 2));
    const auto from_files = run_json(dir.path(), std::string(k_inputs) +
                                                     "weights:\n"
                                                     "  query: {file: q.npy}\n"
                                                     "  key: {file: k.npy}\n"
                                                     "  value: {file: v.npy}\n"
                                                     "bias: {query: {file: bq.npy}}\n");
    // the same numbers written out: 0.1f widened is 0.100000001490116…; f16 0x3555 is 0.333251953125,
    // 0x7BFF 65504, 0x0001 2^−24, 0xC500 −5
    const auto written = run_json(dir.path(), std::string(k_inputs) +
                                                  "weights:\n"
                                                  "  query: [[0.1, -2], [0.3333333333333333, 0], [5e-9, 7]]\n"
                                                  "  key: [[0.5, 0.375], [-1.25, 0.10000000149011612], [2, -3]]\n"
                                                  "  value: [[1, -5], [5.960464477539063e-08, 0.333251953125], "
                                                  "[65504, 0]]\n"
                                                  "bias: {query: [0.25, -0.5]}\n");
    CHECK(from_files["params"] == written["params"]);
    CHECK(from_files["steps"] == written["steps"]);
    CHECK(from_files["params"]["heads"][0]["W_Q"][1][0].get<double>() == 1.0 / 3.0);
}

TEST_CASE("a safetensors tensor is found by name, one head's block taken with rows: and cols:, every dtype exact",
          "[inputs][files][cli]") {
    test::TempDir dir;
    // a layer as a checkpoint stores it (out × in: layout: pytorch), two heads of d_k = 2 in q_proj
    std::vector<float> q(4 * 3);
    for (std::size_t i = 0; i < q.size(); ++i) {
        q[i] = 0.25f * static_cast<float>(i) - 1.0f;
    }
    dir.write("layer.safetensors",
              safetensors({{"model.layers.0.self_attn.q_proj.weight", "F32", {4, 3}, floats(q)},
                           // bfloat16: 1.5, −0.75, 3.140625 (0x4049), 0.0078125; float16: 0.5, 2; float64 bias
                           {"model.layers.0.self_attn.k_proj.weight", "BF16", {2, 3},
                            halves({0x3FC0, 0xBF40, 0x4049, 0x3C00, 0x0000, 0x3F80})},
                           {"model.layers.0.self_attn.v_proj.weight", "F16", {2, 3},
                            halves({0x3800, 0x4000, 0x3C00, 0x0000, 0xBC00, 0x3400})},
                           {"model.layers.0.self_attn.q_proj.bias", "F64", {4}, doubles({0.5, -0.5, 1.5, 2.5})}}));
    const std::string file = "{file: layer.safetensors, tensor: model.layers.0.self_attn.";
    const auto from_file = run_json(dir.path(), std::string(k_inputs) +
                                                    "layout: pytorch\n"
                                                    "weights:\n"
                                                    "  query: " + file + "q_proj.weight, rows: [3, 4]}\n"
                                                    "  key: " + file + "k_proj.weight}\n"
                                                    "  value: " + file + "v_proj.weight, cols: [1, 3]}\n"
                                                    "bias: {query: " + file + "q_proj.bias, cols: [3, 4]}}\n");
    // rows 3 and 4 of q_proj (head 2): 0.25·i − 1 for i = 6 … 11
    const auto written = run_json(dir.path(), std::string(k_inputs) +
                                                  "layout: pytorch\n"
                                                  "weights:\n"
                                                  "  query: [[0.5, 0.75, 1], [1.25, 1.5, 1.75]]\n"
                                                  "  key: [[1.5, -0.75, 3.140625], [0.0078125, 0, 1]]\n"
                                                  "  value: [[0.5, 2, 1], [0, -1, 0.25]]\n"
                                                  "bias: {query: [1.5, 2.5]}\n");
    CHECK(from_file["params"] == written["params"]);
    CHECK(from_file["steps"] == written["steps"]);
}

TEST_CASE("each bad tensor file is one error at its {file: …}, with what to do", "[inputs][files][cli]") {
    test::TempDir dir;
    const std::string good = safetensors({{"model.layers.0.self_attn.q_proj.weight", "F64", {3, 2},
                                           doubles({1, 2, 3, 4, 5, 6})},
                                          {"model.layers.0.self_attn.k_proj.weight", "F64", {3, 2},
                                           doubles({1, 0, 0, 1, 1, 1})},
                                          {"model.layers.0.mlp.up_proj.weight", "F64", {3, 2}, doubles({0, 0, 0, 0, 0, 0})},
                                          {"stack", "F32", {2, 3, 2}, floats({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})},
                                          {"counts", "I64", {3, 2}, std::string(48, '\0')}});
    dir.write("m.safetensors", good);
    const std::string cut = safetensors({{"model.layers.0.self_attn.q_proj.weight", "F64", {3, 2}, doubles({1, 2, 3, 4, 5, 6})},
                                         {"last", "F64", {3, 2}, doubles({1, 2, 3, 4, 5, 6})}});
    dir.write("cut.safetensors", cut.substr(0, cut.size() - 20));
    dir.write("q.npy", npy("<f8", false, "(3, 2)", doubles({1, 2, 3, 4, 5, 6})));
    dir.write("short.npy", npy("<f8", false, "(3, 2)", doubles({1, 2, 3})));
    dir.write("ints.npy", npy("<i8", false, "(3, 2)", std::string(48, '\0')));
    dir.write("nan.npy", npy("<f2", false, "(3, 2)", halves({0x3C00, 0x7E00, 0, 0, 0, 0})));
    dir.write("q.csv.npy", "1,2\n3,4\n5,6\n");
    dir.write("huge.npy", npy("<f8", false, "(99999999999999999999999, 2)", doubles({1, 2})));
    dir.write("huge.safetensors", safetensors({{"w", "F64", {std::uint64_t{1} << 40, std::uint64_t{1} << 40}, ""}}));
    const std::string rest = "\n  key: [[1, 0], [0, 1], [1, 1]]\n  value: [[1, 0], [0, 1], [1, 1]]\n";
    const auto query = [&](const std::string& spec) {
        return run_in(dir.path(), std::string(k_inputs) + "weights:\n  query: " + spec + rest);
    };
    // the position is that of the {file: …} (column 10 of "  query: {…}")
    require_one_error(query("{file: m.safetensors, tensor: model.layers.0.self_attn.q_prj.weight}"),
                      "<stdin>:3:10: weights.query.file \"m.safetensors\": the file has no tensor "
                      "model.layers.0.self_attn.q_prj.weight (it has 5 tensors)",
                      "the closest names: model.layers.0.self_attn.q_proj.weight, "
                      "model.layers.0.self_attn.k_proj.weight");
    require_one_error(query("{file: m.safetensors, tensor: stack}"),
                      "<stdin>:3:10: weights.query.file \"m.safetensors\": the tensor stack has 3 dimensions "
                      "(2 × 3 × 2); expected a matrix or a vector");
    require_one_error(query("{file: m.safetensors, tensor: counts}"),
                      "<stdin>:3:10: weights.query.file \"m.safetensors\": the tensor counts holds numbers of type "
                      "I64; expected F64, F32, F16 or BF16");
    require_one_error(query("{file: cut.safetensors, tensor: last}"),
                      "<stdin>:3:10: weights.query.file \"cut.safetensors\": the tensor last ends at byte",
                      "the file is truncated");
    require_one_error(query("{file: m.safetensors}"),
                      "<stdin>:3:10: weights.query names a safetensors file but no tensor; expected tensor: NAME");
    require_one_error(query("{file: short.npy}"),
                      "<stdin>:3:10: weights.query.file \"short.npy\": the .npy file holds 24 bytes of numbers; "
                      "its shape needs 48",
                      "the file is truncated");
    require_one_error(query("{file: ints.npy}"),
                      "<stdin>:3:10: weights.query.file \"ints.npy\": the .npy file holds numbers of type <i8; "
                      "expected float64, float32 or float16");
    require_one_error(query("{file: nan.npy}"),
                      "<stdin>:3:10: weights.query[1,2] is nan in nan.npy; expected a finite number");
    require_one_error(query("{file: q.csv.npy}"),
                      "<stdin>:3:10: weights.query.file \"q.csv.npy\": the file is not a .npy file");
    require_one_error(query("{file: huge.npy}"),
                      "<stdin>:3:10: weights.query.file \"huge.npy\": the .npy header's shape "
                      "(99999999999999999999999, 2) cannot be read");
    require_one_error(query("{file: huge.safetensors, tensor: w}"),
                      "<stdin>:3:10: weights.query.file \"huge.safetensors\": the tensor w is 1099511627776 × "
                      "1099511627776, more numbers than any file holds");
    // the wrong shape for the example: the block is read, and the shapes are checked as for any matrix
    const auto wide = query("{file: m.safetensors, tensor: model.layers.0.self_attn.q_proj.weight, rows: [1, 2]}");
    CHECK(wide.status == 2);
    CHECK(wide.err.find("weights.query") != std::string::npos);
    // rows: and cols: within the tensor, first ≤ last
    require_one_error(query("{file: q.npy, rows: [2, 4]}"), "<stdin>:3:34: weights.query.rows[2]");
    require_one_error(query("{file: q.npy, cols: [2, 1]}"),
                      "<stdin>:3:30: weights.query.cols is [2, 1]; expected FIRST ≤ LAST");
    require_one_error(query("{file: q.npy, tensor: x}"), "<stdin>:3:24: unknown key weights.query.tensor");
    // a vector from a matrix of more than one row and column
    const auto bias = run_in(dir.path(), std::string(k_inputs) + "weights:\n  query: [[1, 0], [0, 1], [1, 1]]" + rest +
                                             "bias: {query: {file: q.npy}}\n");
    require_one_error(bias, "<stdin>:6:15: bias.query is a 3 × 2 matrix; expected a vector",
                      "take one row or one column of it with rows: [i, i] or cols: [j, j]");
    const auto one_column = run_in(dir.path(), std::string(k_inputs) + "weights:\n  query: [[1, 0], [0, 1], [1, 1]]" +
                                                   rest + "bias: {query: {file: q.npy, cols: [2, 2], rows: [1, 2]}}\n");
    CHECK(one_column.status == 0);
}

TEST_CASE("a .npy file that NumPy itself wrote is read as NumPy reads it, in each dtype and order",
          "[inputs][files][cli][documents]") {
    // NumPy is the independent writer here (python3-numpy comes with python3-pandas, which bootstrap installs)
    const auto numpy = test::shell("/usr/bin/python3 -c 'import numpy' 2>&1");
    REQUIRE(numpy.status == 0);
    test::TempDir dir;
    // each array saved, and its values as NumPy reads them back, widened to float64 and written
    // with repr (which reads back as the same double)
    const std::string script =
        "import json, numpy as np\n"
        "rng = np.random.default_rng(5)\n"
        "base = rng.uniform(-2, 2, (3, 2))\n"
        "arrays = {'f8.npy': base, 'f4be.npy': base.astype('>f4'), 'f4f.npy': np.asfortranarray(base.astype('<f4')),\n"
        "          'f2.npy': base.astype('<f2'), 'f2bef.npy': np.asfortranarray(base.astype('>f2'))}\n"
        "out = {}\n"
        "for name, a in arrays.items():\n"
        "    np.save(name, a)\n"
        "    out[name] = [[repr(float(x)) for x in row] for row in np.load(name).astype(np.float64)]\n"
        "print(json.dumps(out))\n";
    dir.write("write.py", script);
    const auto written = test::shell("cd '" + dir.path() + "' && /usr/bin/python3 write.py");
    INFO(written.out);
    REQUIRE(written.status == 0);
    const auto expected = nlohmann::json::parse(written.out);
    for (const auto& [name, rows] : expected.items()) {
        CAPTURE(name);
        const auto doc = run_json(dir.path(), std::string(k_inputs) + "weights:\n  query: {file: " + name +
                                                  "}\n  key: [[1, 0], [0, 1], [1, 1]]\n  value: [[1, 0], [0, 1], [1, 1]]\n");
        const auto& W_Q = doc["params"]["heads"][0]["W_Q"];
        REQUIRE(W_Q.size() == 3);
        for (std::size_t i = 0; i < 3; ++i) {
            for (std::size_t j = 0; j < 2; ++j) {
                CHECK(W_Q[i][j].get<double>() == std::stod(rows[i][j].get<std::string>()));
            }
        }
    }
}
