// GGUF reader on real files (every golden model and vocab file parses, with the expected metadata and tensor
// layout) and writer round trips. The enumerated corrupt-file suite lives in test-gguf-corrupt.cpp.
#include <filesystem>
#include <fstream>
#include <vector>

#include <catch2/catch.hpp>

#include "model/dtype.hpp"
#include "model/gguf.hpp"
#include "support/error.hpp"

namespace fs = std::filesystem;
using namespace basalt;
using Catch::Matchers::Contains;

namespace {

fs::path testdata() {
    const fs::path p = BASALT_TESTDATA_DIR;
    REQUIRE(fs::is_directory(p / "golden" / "models"));  // missing test data is a failure, not a skip
    return p;
}

std::vector<fs::path> files_in(const fs::path& dir, const std::string& ext) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() == ext) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("every golden model parses with consistent tensors", "[gguf]") {
    const auto models = files_in(testdata() / "golden" / "models", ".gguf");
    REQUIRE(models.size() >= 20);
    for (const auto& path : models) {
        INFO(path.string());
        const auto g = gguf::open(path);
        const auto& f = g.file;
        CHECK(f.version() == 3);
        CHECK(f.alignment() == 32);
        CHECK(f.get_string("general.architecture").has_value());
        CHECK(!f.tensors().empty());
        uint64_t end = 0;
        for (const auto& t : f.tensors()) {
            CHECK(t.offset % 32 == 0);
            end = std::max(end, t.offset + t.n_bytes);
        }
        CHECK(f.data_offset() + end <= g.map->size());
        const auto tokens = f.get_strings("tokenizer.ggml.tokens");
        REQUIRE(tokens.has_value());
        CHECK(tokens->size() >= 256);
    }
}

TEST_CASE("tensor types and shapes read as written by llama.cpp's converter", "[gguf]") {
    const auto g = gguf::open(testdata() / "golden" / "models" / "tiny-llama-q8_0.gguf");
    const auto* emb = g.file.tensor("token_embd.weight");
    REQUIRE(emb != nullptr);
    CHECK(emb->type == BASALT_DTYPE_Q8_0);
    CHECK(emb->n_dims == 2);
    CHECK(emb->ne[1] == static_cast<int64_t>(g.file.get_strings("tokenizer.ggml.tokens")->size()));
    CHECK(emb->n_bytes == *dtype_bytes(BASALT_DTYPE_Q8_0, emb->n_elements()));
    const auto* norm = g.file.tensor("output_norm.weight");
    REQUIRE(norm != nullptr);
    CHECK(norm->type == BASALT_DTYPE_F32);
    CHECK(norm->n_dims == 1);
    CHECK(g.file.get_int("llama.block_count").value_or(-1) == 4);
    CHECK_THROWS_WITH(g.file.get_string("llama.block_count"),
                      Contains("metadata 'llama.block_count' has type uint32, expected string"));
    CHECK_FALSE(g.file.get_int("no.such.key").has_value());

    const auto k = gguf::open(testdata() / "golden" / "models" / "tiny-llama256-q4_k.gguf");
    CHECK(k.file.tensor("blk.0.ffn_down.weight")->type == BASALT_DTYPE_Q4_K);
}

TEST_CASE("every vocab-only tokenizer file parses", "[gguf]") {
    const auto vocabs = files_in(testdata() / "tokenizer", ".gguf");
    REQUIRE(vocabs.size() >= 12);
    for (const auto& path : vocabs) {
        INFO(path.string());
        const auto g = gguf::open(path);
        CHECK(g.file.tensors().empty());
        CHECK(g.file.get_string("tokenizer.ggml.model").has_value());
    }
}

TEST_CASE("the writer round-trips metadata and tensors", "[gguf]") {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 3);
    w.set_f32("llama.rope.freq_base", 10000.f);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    gguf::Value arr;
    arr.type = gguf::ValueType::ARRAY;
    arr.elem_type = gguf::ValueType::STRING;
    for (const char* s : {"a", "bb", ""}) {
        gguf::Value e;
        e.type = gguf::ValueType::STRING;
        e.s = s;
        arr.items.push_back(e);
    }
    w.set("tokenizer.ggml.tokens", arr);
    const std::vector<float> a = {1, 2, 3, 4, 5, 6};
    const std::vector<float> b = {7};
    w.add_tensor("a", BASALT_DTYPE_F32, {3, 2}, a.data(), a.size() * 4);
    w.add_tensor("b", BASALT_DTYPE_F32, {1}, b.data(), 4);
    CHECK_THROWS_WITH(w.add_tensor("a", BASALT_DTYPE_F32, {1}, b.data(), 4), Contains("added twice"));
    CHECK_THROWS_WITH(w.add_tensor("c", BASALT_DTYPE_F32, {2}, b.data(), 4), Contains("4 bytes given for 2 elements"));

    const auto bytes = w.to_bytes();
    const auto f = gguf::File::parse(bytes.data(), bytes.size(), "roundtrip");
    CHECK(f.get_string("general.architecture") == "llama");
    CHECK(f.get_int("llama.block_count") == 3);
    CHECK(f.get_float("llama.rope.freq_base") == 10000.0);
    CHECK(f.get_bool("tokenizer.ggml.add_bos_token") == true);
    CHECK(*f.get_strings("tokenizer.ggml.tokens") == std::vector<std::string>{"a", "bb", ""});
    REQUIRE(f.tensors().size() == 2);
    const auto* ta = f.tensor("a");
    CHECK(ta->ne[0] == 3);
    CHECK(ta->ne[1] == 2);
    CHECK(std::memcmp(f.tensor_data(*ta), a.data(), 24) == 0);
    CHECK(*reinterpret_cast<const float*>(f.tensor_data(*f.tensor("b"))) == 7.f);
    CHECK(f.tensor("b")->offset == 32);
}

TEST_CASE("rewriting a golden model reproduces it byte for byte", "[gguf]") {
    const auto path = testdata() / "golden" / "models" / "tiny-qwen2-q4_0.gguf";
    const auto g = gguf::open(path);
    gguf::Writer w;
    gguf::copy_metadata(g.file, w);
    for (const auto& t : g.file.tensors()) {
        w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), g.file.tensor_data(t), t.n_bytes);
    }
    const auto bytes = w.to_bytes();
    REQUIRE(bytes.size() == g.map->size());
    CHECK(std::memcmp(bytes.data(), g.map->data(), bytes.size()) == 0);
}

TEST_CASE("opening a missing file or a folder fails with the path", "[gguf]") {
    try {
        gguf::open("/nonexistent/model.gguf");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.status() == BASALT_ERR_NOT_FOUND);
        CHECK_THAT(e.what(), Contains("/nonexistent/model.gguf: cannot open"));
    }
    CHECK_THROWS_WITH(gguf::open(testdata()), Contains("is a directory, not a model file"));
}
