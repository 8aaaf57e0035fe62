// Models through the C API: load, describe, metadata, tensors, memory plan, and errors.
#include <unistd.h>

#include <basalt/basalt.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test-support.hpp"
#include "unrunnable-models.hpp"

using Catch::Matchers::Contains;
using test::last_error;

using test::Model;
namespace {
std::string golden(const std::string& name) {
    return test::golden_model(name);
}
}  // namespace

TEST_CASE("a model loads and describes itself", "[model-api]") {
    Model model(golden("tiny-qwen2-q8_0.gguf"));
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_model_describe(model.m, &info) == BASALT_OK);
    CHECK(std::string(info.arch) == "qwen2");
    CHECK(info.n_layer == 3);
    CHECK(info.n_head_kv == 2);
    CHECK(info.n_vocab == 515);
    CHECK(info.supported != 0);
    CHECK(info.gguf_version == 3);
    CHECK(info.n_tensors == basalt_model_tensor_count(model.m));

    const char* text = nullptr;
    REQUIRE(basalt_model_meta(model.m, "qwen2.attention.head_count", &text) == BASALT_OK);
    CHECK(std::string(text) == "4");
    REQUIRE(basalt_model_meta(model.m, "tokenizer.ggml.tokens", &text) == BASALT_OK);
    CHECK(std::string(text) == "[515 string]");
    CHECK(basalt_model_meta(model.m, "no.such.key", &text) == BASALT_ERR_NOT_FOUND);
    CHECK_THAT(last_error(), Contains("no metadata key 'no.such.key'"));

    uint64_t q8_bytes = 0;
    for (size_t i = 0; i < basalt_model_tensor_count(model.m); ++i) {
        basalt_model_tensor t{};
        t.struct_size = sizeof(t);
        REQUIRE(basalt_model_tensor_info(model.m, i, &t) == BASALT_OK);
        CHECK(t.offset % 32 == 0);
        if (t.type == BASALT_DTYPE_Q8_0) q8_bytes += t.n_bytes;
    }
    CHECK(q8_bytes > 0);
}

TEST_CASE("the memory plan through the C API", "[model-api]") {
    Model model(golden("tiny-llama-f16.gguf"));
    basalt_plan_params pp{};
    pp.struct_size = sizeof(pp);
    pp.n_ctx = 64;
    pp.n_batch = 8;
    pp.k_type = BASALT_DTYPE_F32;
    pp.v_type = -1;  // f16
    basalt_memory_plan plan{};
    plan.struct_size = sizeof(plan);
    REQUIRE(basalt_model_plan(model.m, &pp, &plan) == BASALT_OK);
    CHECK(plan.n_ctx == 64);
    CHECK(plan.n_batch == 8);
    CHECK(plan.kv_bytes_per_token == 4 * (32 * 4 + 32 * 2));
    CHECK(plan.kv_bytes == 64 * plan.kv_bytes_per_token);
    // The model's host tables (parsed metadata, the tokenizer it builds for the plan) are part of the total.
    CHECK(plan.host_bytes > 0);
    CHECK(plan.total_bytes == plan.weight_bytes + plan.kv_bytes + plan.scratch_bytes + plan.host_bytes);
    // A caller built for ABI 1.6 passes the struct without host_bytes: the same total, nothing written past it.
    unsigned char old[sizeof(basalt_memory_plan)];
    std::memset(old, 0xAB, sizeof(old));
    basalt_memory_plan small{};
    small.struct_size = offsetof(basalt_memory_plan, host_bytes);
    std::memcpy(old, &small, sizeof(small.struct_size));
    REQUIRE(basalt_model_plan(model.m, &pp, reinterpret_cast<basalt_memory_plan*>(old)) == BASALT_OK);
    basalt_memory_plan seen{};
    std::memcpy(&seen, old, sizeof(seen));
    CHECK(seen.total_bytes == plan.total_bytes);
    CHECK(old[offsetof(basalt_memory_plan, host_bytes)] == 0xAB);

    pp.k_type = 12345;
    basalt_memory_plan untouched{};
    untouched.struct_size = sizeof(untouched);
    CHECK(basalt_model_plan(model.m, &pp, &untouched) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("K cache type id 12345 is unknown"));
    CHECK(untouched.total_bytes == 0);
}

TEST_CASE("loading a broken or missing model fails with the file and reason", "[model-api]") {
    basalt_model* m = nullptr;
    CHECK(basalt_model_load(nullptr, "/no/such/file.gguf", nullptr, &m) == BASALT_ERR_NOT_FOUND);
    CHECK_THAT(last_error(), Contains("/no/such/file.gguf: cannot open"));
    const std::string text = std::string(BASALT_TEST_MOCK_DIR) + "/not-a-library.so";
    CHECK(basalt_model_load(nullptr, text.c_str(), nullptr, &m) == BASALT_ERR_FORMAT);
    CHECK_THAT(last_error(), Contains("bad magic"));
    CHECK(m == nullptr);
    int32_t t = 0;
    CHECK(basalt_dtype_from_name("Q4_K", &t) == BASALT_OK);
    CHECK(t == BASALT_DTYPE_Q4_K);
    CHECK(std::string(basalt_dtype_name(BASALT_DTYPE_BF16)) == "bf16");
}

TEST_CASE("tokenize and detokenize refuse buffers and lengths that cannot be right, naming them", "[model-api]") {
    Model model(golden("tiny-llama-f32.gguf"));
    const char* text = "Once upon a time";
    size_t n = 0;
    // SIZE_MAX: NUL-terminated (it used to reach std::string as a length: ERR_INTERNAL).
    std::vector<int32_t> ids(64);
    REQUIRE(basalt_tokenize(model.m, text, SIZE_MAX, BASALT_TOKENIZE_ADD_SPECIAL, ids.data(), ids.size(), &n) ==
            BASALT_OK);
    size_t n2 = 0;
    REQUIRE(basalt_tokenize(model.m, text, std::strlen(text), BASALT_TOKENIZE_ADD_SPECIAL, ids.data(), ids.size(),
                            &n2) == BASALT_OK);
    CHECK(n == n2);
    CHECK(basalt_tokenize(model.m, text, SIZE_MAX - 1, 0, ids.data(), ids.size(), &n) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("text_len"));
    // A NULL buffer with a capacity is a wrong argument, not "too small"; NULL with 0 still asks for the count.
    CHECK(basalt_tokenize(model.m, text, SIZE_MAX, 0, nullptr, 4, &n) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("out_tokens is NULL but capacity is 4"));
    CHECK(basalt_tokenize(model.m, text, SIZE_MAX, 0, nullptr, 0, &n) == BASALT_ERR_CAPACITY);
    CHECK(n == n2 - 1);
    size_t len = 0;
    CHECK(basalt_detokenize(model.m, ids.data(), n2, 0, nullptr, 16, &len) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("out is NULL but capacity is 16"));
    CHECK(basalt_detokenize(model.m, ids.data(), n2, 0, nullptr, 0, &len) == BASALT_ERR_CAPACITY);
    CHECK(len > 0);
}

TEST_CASE("an error naming a corrupt key shows its control bytes escaped, not cut at a NUL", "[model-api]") {
    std::ifstream in(golden("tiny-llama-f32.gguf"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = "general.architecture";
    const size_t at = bytes.find(key);
    REQUIRE(at != std::string::npos);
    bytes[at + 7] = '\0';  // "general\0architecture"
    bytes[at + 8] = '\x04';
    // Its value type (the u32 after the key) made unknown: the reader's message names the key.
    bytes[at + key.size()] = 13;
    bytes[at + key.size() + 1] = bytes[at + key.size() + 2] = bytes[at + key.size() + 3] = 0;
    const std::string tmp = (std::filesystem::temp_directory_path() / "basalt-corrupt-key.gguf").string();
    {
        std::ofstream out(tmp, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    basalt_model* m = nullptr;
    CHECK(basalt_model_load(nullptr, tmp.c_str(), nullptr, &m) == BASALT_ERR_FORMAT);
    CHECK(m == nullptr);
    CHECK_THAT(last_error(), Contains("metadata 'general\\x00\\x04rchitecture' has unknown value type 13"));
    std::filesystem::remove(tmp);
}

TEST_CASE("a model missing a tensor or with a zero-sized one is not runnable, told before any session", "[model-api]") {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("basalt-unrunnable-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    struct Cleanup {
        std::filesystem::path p;
        ~Cleanup() {
            std::error_code ec;
            std::filesystem::remove_all(p, ec);
        }
    } cleanup{dir};
    const struct {
        test::Unrunnable variant;
        const char* file;
        basalt_status status;
        const char* message;
    } cases[] = {
        {test::Unrunnable::kComplete, "complete.gguf", BASALT_OK, ""},
        {test::Unrunnable::kMissingTensor, "missing.gguf", BASALT_ERR_FORMAT,
         "missing.gguf: tensor 'blk.1.ffn_down.weight' required by architecture llama is missing"},
        {test::Unrunnable::kZeroDim, "zero.gguf", BASALT_ERR_FORMAT,
         "zero.gguf: tensor 'blk.0.attn_k.weight' has a zero-sized dimension (shape [32, 0]): the llama graph cannot "
         "use it"},
        // Rope scaling (issue 29): what no builder implements is refused naming the key; what is implemented runs.
        {test::Unrunnable::kUnknownRopeScaling, "wobble.gguf", BASALT_ERR_UNSUPPORTED,
         "wobble.gguf: 'llama.rope.scaling.type' = 'wobble' is not a rope scaling Basalt implements"},
        {test::Unrunnable::kSoftCap, "softcap.gguf", BASALT_ERR_UNSUPPORTED,
         "softcap.gguf: 'llama.final_logit_softcapping' = 30 (soft-capping) is not applied by the llama graph"},
        {test::Unrunnable::kYarnBeta, "beta.gguf", BASALT_ERR_UNSUPPORTED,
         "beta.gguf: 'llama.rope.scaling.yarn_beta_fast' = 16 differs from the value llama.cpp applies (32)"},
        {test::Unrunnable::kRopeFreqs, "freqs.gguf", BASALT_OK, ""},
        {test::Unrunnable::kYarn, "yarn.gguf", BASALT_OK, ""},
        {test::Unrunnable::kLongrope, "longrope.gguf", BASALT_OK, ""},
    };
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    for (const auto& c : cases) {
        INFO(c.file);
        const std::string path = (dir / c.file).string();
        REQUIRE(test::write_unrunnable_model(path, c.variant).empty());
        Model model(path);
        CHECK(basalt_model_check_runnable(model.m) == c.status);
        if (c.status != BASALT_OK) CHECK_THAT(last_error(), Contains(c.message));
        // The vocabulary alone is enough to tokenize.
        int32_t ids[8];
        size_t n = 0;
        CHECK(basalt_tokenize(model.m, "hi", SIZE_MAX, 0, ids, 8, &n) == BASALT_OK);
        CHECK(n >= 1);
        // A session refuses it with the same message, before it allocates anything.
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        basalt_session* s = nullptr;
        CHECK(basalt_session_create(rt.rt, model.m, &p, &s) == c.status);
        if (c.status != BASALT_OK) CHECK_THAT(last_error(), Contains(c.message));
        CHECK((s != nullptr) == (c.status == BASALT_OK));
        basalt_session_free(s);
    }
    // An architecture without a graph builder is UNSUPPORTED, not a broken file, and is not described as supported.
    const std::string unknown = (dir / "mamba.gguf").string();
    REQUIRE(test::write_unrunnable_model(unknown, test::Unrunnable::kUnknownArch).empty());
    Model mamba(unknown);
    CHECK(basalt_model_check_runnable(mamba.m) == BASALT_ERR_UNSUPPORTED);
    CHECK_THAT(last_error(), Contains("architecture 'mamba' is not supported"));
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_model_describe(mamba.m, &info) == BASALT_OK);
    CHECK(info.supported == 0);
    // t5 has its builders now: runnable, and described as supported.
    Model t5(golden("tiny-t5-f32.gguf"));
    CHECK(basalt_model_check_runnable(t5.m) == BASALT_OK);
    REQUIRE(basalt_model_describe(t5.m, &info) == BASALT_OK);
    CHECK(info.supported == 1);
    CHECK(basalt_model_check_runnable(nullptr) == BASALT_ERR_INVALID_ARGUMENT);
}

// Longrope (phi3's, llama's with rope.scaling.type longrope) picks its factors by the session's context, as llama.cpp
// does: the short ones (here all 1: the plain rope's logits) while the context fits the original 16 positions, the
// long ones (all 4) past it.
TEST_CASE("longrope takes the short factors within the original context and the long ones past it", "[model-api]") {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("basalt-longrope-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    struct Cleanup {
        std::filesystem::path p;
        ~Cleanup() {
            std::error_code ec;
            std::filesystem::remove_all(p, ec);
        }
    } cleanup{dir};
    const std::string plain = (dir / "plain.gguf").string(), longrope = (dir / "longrope.gguf").string();
    REQUIRE(test::write_unrunnable_model(plain, test::Unrunnable::kComplete).empty());
    REQUIRE(test::write_unrunnable_model(longrope, test::Unrunnable::kLongrope).empty());
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    auto logits = [&](const std::string& path, uint32_t n_ctx) {
        Model model(path);
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = n_ctx;
        basalt_session* s = nullptr;
        REQUIRE(basalt_session_create(rt.rt, model.m, &p, &s) == BASALT_OK);
        const auto out = test::decode_rows(s, {1, 260, 261, 262, 263, 260, 261, 262, 263, 260, 261, 262}, 0, 0);
        basalt_session_free(s);
        return out;
    };
    auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
        REQUIRE(a.size() == b.size());
        double d = 0;
        for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
        return d;
    };
    const auto reference = logits(plain, 16);
    const double short_diff = max_diff(logits(longrope, 16), reference);
    const double long_diff = max_diff(logits(longrope, 64), reference);
    INFO("short factors vs plain rope " << short_diff << ", long factors vs plain rope " << long_diff);
    CHECK(short_diff <= 1e-5);
    CHECK(long_diff > 100 * std::max(short_diff, 1e-7));
}

TEST_CASE("array metadata element by element", "[model-api]") {
    Model model(golden("tiny-qwen2-q8_0.gguf"));
    size_t n = 0;
    REQUIRE(basalt_model_meta_array_size(model.m, "tokenizer.ggml.tokens", &n) == BASALT_OK);
    CHECK(n == 515);
    const char* text = nullptr;
    size_t len = 99;
    REQUIRE(basalt_model_meta_array_string(model.m, "tokenizer.ggml.tokens", 0, &text, &len) == BASALT_OK);
    CHECK(std::strlen(text) == len);
    CHECK(basalt_model_meta_array_string(model.m, "tokenizer.ggml.tokens", 514, &text, nullptr) == BASALT_OK);
    double x = -1;
    REQUIRE(basalt_model_meta_array_number(model.m, "tokenizer.ggml.token_type", 0, &x) == BASALT_OK);
    CHECK(x >= 1);
    CHECK(basalt_model_meta_array_string(model.m, "tokenizer.ggml.tokens", 515, &text, nullptr) ==
          BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("index 515 is past the end of metadata 'tokenizer.ggml.tokens' (515 elements)"));
    CHECK(basalt_model_meta_array_number(model.m, "tokenizer.ggml.tokens", 0, &x) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("is an array of string, not of numbers"));
    CHECK(basalt_model_meta_array_string(model.m, "tokenizer.ggml.token_type", 0, &text, nullptr) ==
          BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_model_meta_array_size(model.m, "qwen2.block_count", &n) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("metadata 'qwen2.block_count' is a uint32, not an array"));
    CHECK(basalt_model_meta_array_size(model.m, "no.such.key", &n) == BASALT_ERR_NOT_FOUND);
    CHECK(basalt_model_meta_array_size(nullptr, "x", &n) == BASALT_ERR_INVALID_ARGUMENT);

    // The shipped target's scores come back as the floats stored.
    Model target("target");
    REQUIRE(basalt_model_meta_array_size(target.m, "tokenizer.ggml.scores", &n) == BASALT_OK);
    CHECK(n == 2048);
    REQUIRE(basalt_model_meta_array_number(target.m, "tokenizer.ggml.scores", 2047, &x) == BASALT_OK);
    CHECK(x == static_cast<double>(static_cast<float>(x)));
}
