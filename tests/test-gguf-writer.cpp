// Writing GGUF files through the C API (basalt_gguf_writer_*): models and llama.cpp control vectors that load
// back with basalt_model_load, quantized bytes equal to basalt_model_quantize's, and every error.
#include <unistd.h>

#include <basalt/basalt.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using test::last_error;
namespace fs = std::filesystem;

namespace {

// A scratch folder removed with its contents at the end of the test.
struct TempDir {
    fs::path path;
    TempDir() {
        static int counter = 0;
        path = fs::temp_directory_path() /
               ("basalt-gguf-writer-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

struct Writer {
    basalt_gguf_writer* w = nullptr;
    Writer() { REQUIRE(basalt_gguf_writer_create(&w) == BASALT_OK); }
    ~Writer() { basalt_gguf_writer_destroy(w); }
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
};

using test::Model;

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream is(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(is), std::istreambuf_iterator<char>()};
}

std::vector<float> ramp(size_t n, float scale = 1.f) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = scale * std::sin(0.37f * static_cast<float>(i) + 0.1f);
    return x;
}

std::string meta(const basalt_model* m, const char* key) {
    const char* text = nullptr;
    INFO(key);
    REQUIRE(basalt_model_meta(m, key, &text) == BASALT_OK);
    return text;
}

basalt_model_tensor tensor(const basalt_model* m, size_t i) {
    basalt_model_tensor t{};
    t.struct_size = sizeof(t);
    REQUIRE(basalt_model_tensor_info(m, i, &t) == BASALT_OK);
    return t;
}

basalt_status add(basalt_gguf_writer* w, const std::string& name, basalt_dtype type, std::vector<int64_t> ne) {
    size_t n = 1;
    for (int64_t d : ne) n *= static_cast<size_t>(d);
    const std::vector<float> x = ramp(n);
    return basalt_gguf_writer_add_tensor_f32(w, name.c_str(), type, ne.data(), static_cast<uint32_t>(ne.size()),
                                             x.data(), x.size());
}

// A llama-shaped model small enough for a test: n_embd 256 so that every writable type's blocks divide a row.
void llama_metadata(basalt_gguf_writer* w) {
    REQUIRE(basalt_gguf_writer_set_string(w, "general.architecture", "llama") == BASALT_OK);
    REQUIRE(basalt_gguf_writer_set_u32(w, "llama.block_count", 1) == BASALT_OK);
    REQUIRE(basalt_gguf_writer_set_u32(w, "llama.embedding_length", 256) == BASALT_OK);
    REQUIRE(basalt_gguf_writer_set_u32(w, "llama.attention.head_count", 4) == BASALT_OK);
    REQUIRE(basalt_gguf_writer_set_u32(w, "llama.vocab_size", 32) == BASALT_OK);
}

}  // namespace

TEST_CASE("a written model loads with its metadata and tensors", "[gguf-writer]") {
    TempDir dir;
    Writer w;
    llama_metadata(w.w);
    REQUIRE(basalt_gguf_writer_set_string(w.w, "general.name", "writer-test") == BASALT_OK);
    REQUIRE(basalt_gguf_writer_set_i32(w.w, "test.i32", -7) == BASALT_OK);
    REQUIRE(basalt_gguf_writer_set_f32(w.w, "test.f32", 0.5f) == BASALT_OK);
    REQUIRE(basalt_gguf_writer_set_bool(w.w, "test.bool", 1) == BASALT_OK);
    const char* tokens[] = {"<s>", "</s>", "hello"};
    REQUIRE(basalt_gguf_writer_set_array_string(w.w, "test.strings", tokens, 3) == BASALT_OK);
    const int32_t ints[] = {1, 2};
    REQUIRE(basalt_gguf_writer_set_array_i32(w.w, "test.ints", ints, 2) == BASALT_OK);
    const float floats[] = {0.25f, -1.f, 3.f, 4.f};
    REQUIRE(basalt_gguf_writer_set_array_f32(w.w, "test.floats", floats, 4) == BASALT_OK);
    REQUIRE(basalt_gguf_writer_set_array_i32(w.w, "test.empty", nullptr, 0) == BASALT_OK);
    const int32_t flags[] = {1, 0, 7};
    REQUIRE(basalt_gguf_writer_set_array_bool(w.w, "test.bools", flags, 3) == BASALT_OK);
    // Setting a key again replaces its value (and type).
    REQUIRE(basalt_gguf_writer_set_u32(w.w, "test.i32", 9) == BASALT_OK);
    REQUIRE(basalt_gguf_writer_set_i32(w.w, "test.i32", -8) == BASALT_OK);

    const struct {
        const char* name;
        basalt_dtype type;
    } kinds[] = {{"f32.weight", BASALT_DTYPE_F32},   {"f16.weight", BASALT_DTYPE_F16},
                 {"bf16.weight", BASALT_DTYPE_BF16}, {"q8_0.weight", BASALT_DTYPE_Q8_0},
                 {"q4_0.weight", BASALT_DTYPE_Q4_0}, {"q4_k.weight", BASALT_DTYPE_Q4_K},
                 {"q6_k.weight", BASALT_DTYPE_Q6_K}};
    for (const auto& k : kinds) REQUIRE(add(w.w, k.name, k.type, {256, 3}) == BASALT_OK);
    REQUIRE(add(w.w, "norm.weight", BASALT_DTYPE_F32, {256}) == BASALT_OK);
    REQUIRE(add(w.w, "cube", BASALT_DTYPE_F16, {2, 3, 4, 5}) == BASALT_OK);
    CHECK(basalt_gguf_writer_tensor_count(w.w) == 9);
    const std::string path = dir.file("model.gguf");
    REQUIRE(basalt_gguf_writer_write(w.w, path.c_str()) == BASALT_OK);
    CHECK_FALSE(fs::exists(path + ".tmp"));
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);  // no temporary left

    Model model(path);
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_model_describe(model.m, &info) == BASALT_OK);
    CHECK(std::string(info.arch) == "llama");
    CHECK(std::string(info.name) == "writer-test");
    CHECK(info.n_layer == 1);
    CHECK(info.n_embd == 256);
    CHECK(info.gguf_version == 3);
    CHECK(meta(model.m, "test.i32") == "-8");
    CHECK(meta(model.m, "test.f32") == "0.5");
    CHECK(meta(model.m, "test.bool") == "true");
    CHECK(meta(model.m, "test.strings") == "[3 string]");
    CHECK(meta(model.m, "test.ints") == "[2 int32]");
    CHECK(meta(model.m, "test.bools") == "[3 bool]");
    double flag = -1;
    REQUIRE(basalt_model_meta_array_number(model.m, "test.bools", 2, &flag) == BASALT_OK);
    CHECK(flag == 1);
    CHECK(meta(model.m, "test.floats") == "[4 float32]");
    CHECK(meta(model.m, "test.empty") == "[0 int32]");

    REQUIRE(basalt_model_tensor_count(model.m) == 9);
    const std::vector<uint8_t> file = read_bytes(path);
    for (size_t i = 0; i < 7; ++i) {
        const basalt_model_tensor t = tensor(model.m, i);
        CHECK(std::string(t.name) == kinds[i].name);
        CHECK(t.type == kinds[i].type);
        CHECK(t.n_dims == 2);
        CHECK(t.ne[0] == 256);
        CHECK(t.ne[1] == 3);
        CHECK(t.offset % 32 == 0);
    }
    // The f32 tensor holds the values as given.
    const basalt_model_tensor f32 = tensor(model.m, 0);
    REQUIRE(f32.n_bytes == 256 * 3 * 4);
    const std::vector<float> want = ramp(256 * 3);
    REQUIRE(f32.offset + f32.n_bytes <= file.size());
    CHECK(std::memcmp(file.data() + f32.offset, want.data(), f32.n_bytes) == 0);
    const basalt_model_tensor cube = tensor(model.m, 8);
    CHECK(cube.n_dims == 4);
    CHECK(cube.ne[3] == 5);
    CHECK(cube.n_bytes == 2 * 3 * 4 * 5 * 2);
}

TEST_CASE("the writer's quantized bytes are basalt_model_quantize's", "[gguf-writer]") {
    TempDir dir;
    const std::string f32_path = dir.file("f32.gguf");
    {
        Writer w;
        llama_metadata(w.w);
        REQUIRE(add(w.w, "blk.0.attn_q.weight", BASALT_DTYPE_F32, {256, 4}) == BASALT_OK);
        REQUIRE(basalt_gguf_writer_write(w.w, f32_path.c_str()) == BASALT_OK);
    }
    for (basalt_dtype type : {BASALT_DTYPE_F16, BASALT_DTYPE_BF16, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_0,
                              BASALT_DTYPE_Q4_K, BASALT_DTYPE_Q6_K}) {
        INFO(basalt_dtype_name(type));
        const std::string quantized = dir.file(std::string("quantized-") + basalt_dtype_name(type) + ".gguf");
        const std::string direct = dir.file(std::string("direct-") + basalt_dtype_name(type) + ".gguf");
        REQUIRE(basalt_model_quantize(f32_path.c_str(), quantized.c_str(), type, nullptr) == BASALT_OK);
        Writer w;
        llama_metadata(w.w);
        REQUIRE(add(w.w, "blk.0.attn_q.weight", type, {256, 4}) == BASALT_OK);
        REQUIRE(basalt_gguf_writer_write(w.w, direct.c_str()) == BASALT_OK);
        Model a(quantized), b(direct);
        const basalt_model_tensor ta = tensor(a.m, 0), tb = tensor(b.m, 0);
        CHECK(ta.type == type);
        CHECK(tb.type == type);
        REQUIRE(ta.n_bytes == tb.n_bytes);
        const std::vector<uint8_t> fa = read_bytes(quantized), fb = read_bytes(direct);
        CHECK(std::memcmp(fa.data() + ta.offset, fb.data() + tb.offset, ta.n_bytes) == 0);
    }
}

TEST_CASE("a llama.cpp control vector written and loaded back", "[gguf-writer]") {
    TempDir dir;
    const std::string path = dir.file("control.gguf");
    const int64_t n_embd = 64;
    const uint32_t n_layer = 4;
    {
        Writer w;
        REQUIRE(basalt_gguf_writer_set_string(w.w, "general.architecture", "controlvector") == BASALT_OK);
        REQUIRE(basalt_gguf_writer_set_string(w.w, "controlvector.model_hint", "llama") == BASALT_OK);
        REQUIRE(basalt_gguf_writer_set_u32(w.w, "controlvector.layer_count", n_layer) == BASALT_OK);
        for (uint32_t il = 1; il <= n_layer; ++il) {  // llama.cpp's layers start at 1
            const std::string name = "direction." + std::to_string(il);
            const std::vector<float> d = ramp(static_cast<size_t>(n_embd), static_cast<float>(il));
            REQUIRE(basalt_gguf_writer_add_tensor_f32(w.w, name.c_str(), BASALT_DTYPE_F32, &n_embd, 1, d.data(),
                                                      d.size()) == BASALT_OK);
        }
        REQUIRE(basalt_gguf_writer_write(w.w, path.c_str()) == BASALT_OK);
    }
    Model cv(path);
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_model_describe(cv.m, &info) == BASALT_OK);
    CHECK(std::string(info.arch) == "controlvector");
    CHECK(info.n_layer == n_layer);
    CHECK(info.n_embd == n_embd);
    CHECK(info.supported == 0);
    CHECK(info.n_tensors == n_layer);
    CHECK(meta(cv.m, "general.architecture") == "controlvector");
    CHECK(meta(cv.m, "controlvector.model_hint") == "llama");
    CHECK(meta(cv.m, "controlvector.layer_count") == "4");
    REQUIRE(basalt_model_tensor_count(cv.m) == n_layer);
    const std::vector<uint8_t> file = read_bytes(path);
    for (uint32_t il = 1; il <= n_layer; ++il) {
        const basalt_model_tensor t = tensor(cv.m, il - 1);
        CHECK(std::string(t.name) == "direction." + std::to_string(il));
        CHECK(t.type == BASALT_DTYPE_F32);
        CHECK(t.n_dims == 1);
        CHECK(t.ne[0] == n_embd);
        REQUIRE(t.n_bytes == static_cast<uint64_t>(n_embd) * 4);
        const std::vector<float> d = ramp(static_cast<size_t>(n_embd), static_cast<float>(il));
        CHECK(std::memcmp(file.data() + t.offset, d.data(), t.n_bytes) == 0);
    }
    // It is not a model: a session over it is refused, naming the architecture.
    test::Runtime rt;
    basalt_session* s = nullptr;
    CHECK(basalt_session_create(rt.rt, cv.m, nullptr, &s) != BASALT_OK);
    CHECK_THAT(last_error(), Contains("architecture 'controlvector' is not supported"));
    CHECK(s == nullptr);
}

TEST_CASE("general.alignment sets the tensors' alignment", "[gguf-writer]") {
    TempDir dir;
    Writer w;
    llama_metadata(w.w);
    REQUIRE(basalt_gguf_writer_set_u32(w.w, "general.alignment", 64) == BASALT_OK);
    REQUIRE(add(w.w, "a.weight", BASALT_DTYPE_F32, {3}) == BASALT_OK);
    REQUIRE(add(w.w, "b.weight", BASALT_DTYPE_F32, {5}) == BASALT_OK);
    const std::string path = dir.file("aligned.gguf");
    REQUIRE(basalt_gguf_writer_write(w.w, path.c_str()) == BASALT_OK);
    Model m(path);
    CHECK(meta(m.m, "general.alignment") == "64");
    CHECK(tensor(m.m, 0).offset % 64 == 0);
    CHECK(tensor(m.m, 1).offset % 64 == 0);

    CHECK(basalt_gguf_writer_set_u32(w.w, "general.alignment", 48) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("'general.alignment' = 48 is not a power of two"));
    CHECK(basalt_gguf_writer_set_u32(w.w, "general.alignment", 0) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_gguf_writer_set_i32(w.w, "general.alignment", 64) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("'general.alignment' must be a uint32, not int32"));
    CHECK(basalt_gguf_writer_set_string(w.w, "general.alignment", "64") == BASALT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("the GGUF writer's errors", "[gguf-writer]") {
    TempDir dir;
    const std::vector<float> x(512, 1.f);
    const int64_t ne[2] = {256, 2};

    SECTION("NULL arguments") {
        CHECK(basalt_gguf_writer_create(nullptr) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("basalt_gguf_writer_create: out is required"));
        basalt_gguf_writer_destroy(nullptr);
        CHECK(basalt_gguf_writer_tensor_count(nullptr) == 0);
        Writer w;
        CHECK(basalt_gguf_writer_set_u32(nullptr, "k", 1) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("basalt_gguf_writer_set_u32: writer and key are required"));
        CHECK(basalt_gguf_writer_set_i32(w.w, nullptr, 1) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_set_f32(w.w, nullptr, 1.f) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_set_bool(w.w, nullptr, 1) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_set_string(w.w, "k", nullptr) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("metadata 'k': the string is NULL"));
        CHECK(basalt_gguf_writer_set_u32(w.w, "", 1) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("the key is empty"));
        CHECK(basalt_gguf_writer_set_array_string(w.w, "k", nullptr, 2) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("metadata 'k': 2 strings at NULL"));
        const char* with_null[] = {"a", nullptr};
        CHECK(basalt_gguf_writer_set_array_string(w.w, "k", with_null, 2) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("metadata 'k': string 1 is NULL"));
        CHECK(basalt_gguf_writer_set_array_i32(w.w, "k", nullptr, 1) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_set_array_f32(w.w, "k", nullptr, 1) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_add_tensor_f32(nullptr, "t", BASALT_DTYPE_F32, ne, 2, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, nullptr, BASALT_DTYPE_F32, ne, 2, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", BASALT_DTYPE_F32, nullptr, 2, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", BASALT_DTYPE_F32, ne, 2, nullptr, 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("writer, name, ne and data are required"));
        CHECK(basalt_gguf_writer_write(nullptr, dir.file("x.gguf").c_str()) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_write(w.w, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("writer and path are required"));
        CHECK(basalt_gguf_writer_tensor_count(w.w) == 0);
    }

    SECTION("a duplicate tensor name") {
        Writer w;
        REQUIRE(basalt_gguf_writer_add_tensor_f32(w.w, "blk.0.attn_q.weight", BASALT_DTYPE_Q8_0, ne, 2, x.data(),
                                                  512) == BASALT_OK);
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "blk.0.attn_q.weight", BASALT_DTYPE_F32, ne, 2, x.data(), 512) ==
              BASALT_ERR_DUPLICATE);
        CHECK_THAT(last_error(), Contains("tensor 'blk.0.attn_q.weight' added twice"));
        CHECK(basalt_gguf_writer_tensor_count(w.w) == 1);
    }

    SECTION("a bad type") {
        Writer w;
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", 999, ne, 2, x.data(), 512) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("tensor 't': unknown type id 999"));
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", -1, ne, 2, x.data(), 512) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", BASALT_DTYPE_Q4_1, ne, 2, x.data(), 512) ==
              BASALT_ERR_UNSUPPORTED);
        CHECK_THAT(last_error(), Contains("tensor 't': cannot write type q4_1 (supported: f32, f16, bf16, q8_0"));
        CHECK(basalt_gguf_writer_tensor_count(w.w) == 0);
    }

    SECTION("rows that are not whole blocks of the type") {
        Writer w;
        const int64_t small[2] = {64, 8};
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "token_embd.weight", BASALT_DTYPE_Q4_K, small, 2, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("tensor 'token_embd.weight': rows of 64 elements are not whole q4_k blocks "
                                          "of 256"));
        const int64_t odd[2] = {16, 32};
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "w", BASALT_DTYPE_Q8_0, odd, 2, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("rows of 16 elements are not whole q8_0 blocks of 32"));
        // The same rows are fine in a plain type.
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "w", BASALT_DTYPE_F16, odd, 2, x.data(), 512) == BASALT_OK);
    }

    SECTION("a shape that does not match the data, bad dimensions, bad names") {
        Writer w;
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", BASALT_DTYPE_F32, ne, 2, x.data(), 511) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("tensor 't': 511 values given for a shape of 512 elements"));
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", BASALT_DTYPE_F32, ne, 0, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("tensor 't': 0 dimensions (1 to 4 allowed)"));
        const int64_t five[5] = {2, 2, 2, 2, 32};
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", BASALT_DTYPE_F32, five, 5, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        const int64_t zero[2] = {256, 0};
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", BASALT_DTYPE_F32, zero, 2, x.data(), 0) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("tensor 't': ne[1] = 0"));
        const int64_t huge[4] = {INT64_MAX, INT64_MAX, 2, 2};
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "t", BASALT_DTYPE_F32, huge, 4, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("the element count overflows"));
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, "", BASALT_DTYPE_F32, ne, 2, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        const std::string long_name(64, 'n');
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, long_name.c_str(), BASALT_DTYPE_F32, ne, 2, x.data(), 512) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("is 64 bytes long (1 to 63 allowed)"));
        CHECK(basalt_gguf_writer_add_tensor_f32(w.w, std::string(63, 'n').c_str(), BASALT_DTYPE_F32, ne, 2, x.data(),
                                                512) == BASALT_OK);
        CHECK(basalt_gguf_writer_tensor_count(w.w) == 1);
    }

    SECTION("an unwritable path leaves what was there") {
        Writer w;
        llama_metadata(w.w);
        const std::string missing = dir.file("no-such-dir/model.gguf");
        CHECK(basalt_gguf_writer_write(w.w, missing.c_str()) == BASALT_ERR_IO);
        CHECK_THAT(last_error(), Contains(missing + ": cannot create: No such file or directory"));
        CHECK(basalt_gguf_writer_write(w.w, "") == BASALT_ERR_INVALID_ARGUMENT);
        // A folder cannot be replaced by the file: the folder stays, and no temporary file is left beside it.
        const std::string folder = dir.file("a-folder");
        fs::create_directories(folder);
        CHECK(basalt_gguf_writer_write(w.w, folder.c_str()) == BASALT_ERR_IO);
        CHECK_THAT(last_error(), Contains(folder + ": cannot replace: "));
        CHECK(fs::is_directory(folder));
        CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
        // The writer is unchanged: it still writes.
        CHECK(basalt_gguf_writer_write(w.w, dir.file("ok.gguf").c_str()) == BASALT_OK);
    }
}

// basalt_gguf_writer_add_tensor_rows (ABI 1.7): values asked a batch of rows at a time, in order; the file is the one
// basalt_gguf_writer_add_tensor_f32 writes from the same values, for every batch split (rows of 64 floats: 16384
// rows per 4 MiB batch, so 40000 rows take three calls, the last short).
TEST_CASE("a tensor added row batch by row batch is the tensor added at once", "[gguf-writer]") {
    TempDir dir;
    const int64_t ne[2] = {64, 40000};
    const std::vector<float> x = ramp(64 * 40000, 0.5f);
    struct Source {
        const std::vector<float>* x;
        int64_t next = 0;
        int calls = 0;
        int64_t stop_at = -1;
    };
    auto fill = [](void* user, int64_t first_row, int64_t n_rows, float* out) -> int32_t {
        auto* s = static_cast<Source*>(user);
        if (first_row != s->next || first_row == s->stop_at) return 1;  // in order, or asked to stop
        std::memcpy(out, s->x->data() + first_row * 64, static_cast<size_t>(n_rows) * 64 * sizeof(float));
        s->next += n_rows;
        ++s->calls;
        return 0;
    };
    for (const basalt_dtype type : {BASALT_DTYPE_F32, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_0}) {
        INFO(basalt_dtype_name(type));
        Writer a, b;
        REQUIRE(basalt_gguf_writer_set_string(a.w, "general.architecture", "llama") == BASALT_OK);
        REQUIRE(basalt_gguf_writer_set_string(b.w, "general.architecture", "llama") == BASALT_OK);
        REQUIRE(basalt_gguf_writer_add_tensor_f32(a.w, "t.weight", type, ne, 2, x.data(), x.size()) == BASALT_OK);
        Source src{&x};
        REQUIRE(basalt_gguf_writer_add_tensor_rows(b.w, "t.weight", type, ne, 2, fill, &src) == BASALT_OK);
        CHECK(src.calls == 3);
        CHECK(src.next == 40000);
        REQUIRE(basalt_gguf_writer_write(a.w, dir.file("a.gguf").c_str()) == BASALT_OK);
        REQUIRE(basalt_gguf_writer_write(b.w, dir.file("b.gguf").c_str()) == BASALT_OK);
        CHECK(read_bytes(dir.file("a.gguf")) == read_bytes(dir.file("b.gguf")));
    }
    // A callback that stops: BASALT_ERR_CANCELLED naming the tensor and the row, nothing added (the name stays free).
    Writer w;
    Source stop{&x};
    stop.stop_at = 16384;
    CHECK(basalt_gguf_writer_add_tensor_rows(w.w, "t.weight", BASALT_DTYPE_Q8_0, ne, 2, fill, &stop) ==
          BASALT_ERR_CANCELLED);
    CHECK_THAT(last_error(), Contains("tensor 't.weight': the fill callback stopped at row 16384 of 40000"));
    CHECK(basalt_gguf_writer_tensor_count(w.w) == 0);
    Source again{&x};
    CHECK(basalt_gguf_writer_add_tensor_rows(w.w, "t.weight", BASALT_DTYPE_Q8_0, ne, 2, fill, &again) == BASALT_OK);
    // The shape checks of basalt_gguf_writer_add_tensor_f32, before any call of the callback.
    Source none{&x};
    CHECK(basalt_gguf_writer_add_tensor_rows(w.w, "t.weight", BASALT_DTYPE_Q8_0, ne, 2, fill, &none) ==
          BASALT_ERR_DUPLICATE);
    const int64_t odd[2] = {48, 2};
    CHECK(basalt_gguf_writer_add_tensor_rows(w.w, "u.weight", BASALT_DTYPE_Q4_K, odd, 2, fill, &none) ==
          BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("rows of 48 elements are not whole q4_k blocks of 256"));
    CHECK(basalt_gguf_writer_add_tensor_rows(w.w, "u.weight", BASALT_DTYPE_Q8_0, ne, 2, nullptr, &none) ==
          BASALT_ERR_INVALID_ARGUMENT);
    CHECK(none.calls == 0);
}
