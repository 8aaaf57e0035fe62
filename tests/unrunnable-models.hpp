// Small llama models written through the public GGUF writer for the "is it runnable" checks: a complete one, one
// missing a tensor the llama graph needs, and one whose tensor has a zero-sized dimension (the writer refuses
// such shapes, so the file is written whole and one dimension of the tensor's header is patched to 0 afterwards).
// Each carries a small SentencePiece vocabulary, so tokenize works on all three.
#pragma once

#include <basalt/basalt.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace test {

// kUnknownArch: the complete llama model relabelled as architecture "mamba" (its keys "mamba.*"), which no builder
// of this build knows.
// Rope scaling and refusals (issue 29): kUnknownRopeScaling carries llama.rope.scaling.type = "wobble" (no such
// scaling), kSoftCap llama.final_logit_softcapping = 30 (the llama graph applies none): both refused naming the key;
// kRopeFreqs carries Llama 3 frequency factors (rope_freqs.weight), which the llama graph applies; kYarn YaRN x4 over
// an original context of 16 (runs); kYarnBeta the same with yarn_beta_fast = 16, which llama.cpp never reads (refused);
// kLongrope longrope over an original context of 16: short factors all 1, long factors all 4; kMistral3 the llama
// model as architecture mistral3 with YaRN x4 over 16 positions, its own yarn_beta_fast = 16 (mistral3 reads it) and
// attention.temperature_scale = 0.1 (runs with a context of at most 16).
enum class Unrunnable {
    kComplete,
    kMissingTensor,
    kZeroDim,
    kUnknownArch,
    kUnknownRopeScaling,
    kSoftCap,
    kRopeFreqs,
    kYarn,
    kYarnBeta,
    kLongrope,
    kMistral3,
    kInventedArch  // the llama model as architecture "nosucharch", a name no model family has: never supported
};

// The tensor each broken variant breaks.
constexpr const char* kMissingTensorName = "blk.1.ffn_down.weight";
constexpr const char* kZeroDimTensorName = "blk.0.attn_k.weight";

// Writes the variant to path; returns "" or what failed.
inline std::string write_unrunnable_model(const std::string& path, Unrunnable variant) {
    basalt_gguf_writer* w = nullptr;
    if (basalt_gguf_writer_create(&w) != BASALT_OK) return basalt_last_error();
    struct Free {
        basalt_gguf_writer* w;
        ~Free() { basalt_gguf_writer_destroy(w); }
    } free_writer{w};
    constexpr uint32_t kEmbd = 32, kLayers = 2, kFf = 64;
    // <unk>, <s>, </s>, 256 byte pieces, then a few merges of "hi".
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
        tokens.emplace_back(buf);
        types.push_back(6);
    }
    for (const char* t : {"\xe2\x96\x81", "h", "i", "\xe2\x96\x81h", "\xe2\x96\x81hi"}) {
        tokens.emplace_back(t);
        types.push_back(1);
    }
    std::vector<float> scores(tokens.size(), 0.f);
    for (size_t i = 259; i < tokens.size(); ++i) scores[i] = -static_cast<float>(i - 259);
    std::vector<const char*> token_ptrs;
    for (const auto& t : tokens) token_ptrs.push_back(t.c_str());
    const auto n_vocab = static_cast<uint32_t>(tokens.size());
    const std::string arch = variant == Unrunnable::kUnknownArch    ? "mamba"
                             : variant == Unrunnable::kMistral3     ? "mistral3"
                             : variant == Unrunnable::kInventedArch ? "nosucharch"
                                                                    : "llama";
    auto key = [&arch](const char* k) { return arch + "." + k; };
    const bool meta_ok =
        basalt_gguf_writer_set_string(w, "general.architecture", arch.c_str()) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, key("context_length").c_str(), 64) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, key("embedding_length").c_str(), kEmbd) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, key("block_count").c_str(), kLayers) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, key("feed_forward_length").c_str(), kFf) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, key("attention.head_count").c_str(), 2) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, key("attention.head_count_kv").c_str(), 2) == BASALT_OK &&
        basalt_gguf_writer_set_f32(w, key("attention.layer_norm_rms_epsilon").c_str(), 1e-5f) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, key("vocab_size").c_str(), n_vocab) == BASALT_OK &&
        basalt_gguf_writer_set_string(w, "tokenizer.ggml.model", "llama") == BASALT_OK &&
        basalt_gguf_writer_set_array_string(w, "tokenizer.ggml.tokens", token_ptrs.data(), token_ptrs.size()) ==
            BASALT_OK &&
        basalt_gguf_writer_set_array_f32(w, "tokenizer.ggml.scores", scores.data(), scores.size()) == BASALT_OK &&
        basalt_gguf_writer_set_array_i32(w, "tokenizer.ggml.token_type", types.data(), types.size()) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2) == BASALT_OK &&
        basalt_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0) == BASALT_OK;
    if (!meta_ok) return basalt_last_error();
    if (variant == Unrunnable::kUnknownRopeScaling &&
        basalt_gguf_writer_set_string(w, key("rope.scaling.type").c_str(), "wobble") != BASALT_OK) {
        return basalt_last_error();
    }
    if (variant == Unrunnable::kMistral3 &&
        basalt_gguf_writer_set_f32(w, key("attention.temperature_scale").c_str(), 0.1f) != BASALT_OK) {
        return basalt_last_error();
    }
    if (variant == Unrunnable::kYarn || variant == Unrunnable::kYarnBeta || variant == Unrunnable::kMistral3) {
        const bool yarn_ok =
            basalt_gguf_writer_set_string(w, key("rope.scaling.type").c_str(), "yarn") == BASALT_OK &&
            basalt_gguf_writer_set_f32(w, key("rope.scaling.factor").c_str(), 4.f) == BASALT_OK &&
            basalt_gguf_writer_set_u32(w, key("rope.scaling.original_context_length").c_str(), 16) == BASALT_OK &&
            (variant == Unrunnable::kYarn ||
             basalt_gguf_writer_set_f32(w, key("rope.scaling.yarn_beta_fast").c_str(), 16.f) == BASALT_OK);
        if (!yarn_ok) return basalt_last_error();
    }
    if (variant == Unrunnable::kLongrope &&
        (basalt_gguf_writer_set_string(w, key("rope.scaling.type").c_str(), "longrope") != BASALT_OK ||
         basalt_gguf_writer_set_u32(w, key("rope.scaling.original_context_length").c_str(), 16) != BASALT_OK)) {
        return basalt_last_error();
    }
    if (variant == Unrunnable::kSoftCap &&
        basalt_gguf_writer_set_f32(w, key("final_logit_softcapping").c_str(), 30.f) != BASALT_OK) {
        return basalt_last_error();
    }
    auto add = [&](const std::string& name, std::vector<int64_t> ne, bool ones = false) {
        if (variant == Unrunnable::kMissingTensor && name == kMissingTensorName) return true;
        size_t n = 1;
        for (int64_t d : ne) n *= static_cast<size_t>(d);
        std::vector<float> x(n);
        for (size_t i = 0; i < n; ++i) x[i] = ones ? 1.f : 0.05f * std::sin(0.7f * static_cast<float>(i) + 0.3f);
        return basalt_gguf_writer_add_tensor_f32(w, name.c_str(), BASALT_DTYPE_F32, ne.data(),
                                                 static_cast<uint32_t>(ne.size()), x.data(), x.size()) == BASALT_OK;
    };
    const int64_t E = kEmbd, F = kFf;
    bool ok = add("token_embd.weight", {E, n_vocab});
    if (variant == Unrunnable::kRopeFreqs) ok = ok && add("rope_freqs.weight", {E / 2 / 2}, true);
    if (variant == Unrunnable::kLongrope) {
        // Head dim 16 (2 heads of 32): 8 factors each.
        const std::vector<float> longf(E / 2 / 2, 4.f);
        const int64_t ne = E / 2 / 2;
        ok = ok && add("rope_factors_short.weight", {ne}, true) &&
             basalt_gguf_writer_add_tensor_f32(w, "rope_factors_long.weight", BASALT_DTYPE_F32, &ne, 1, longf.data(),
                                               longf.size()) == BASALT_OK;
    }
    for (uint32_t il = 0; il < kLayers && ok; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        ok = add(p + "attn_norm.weight", {E}, true) && add(p + "attn_q.weight", {E, E}) &&
             add(p + "attn_k.weight", {E, E}) && add(p + "attn_v.weight", {E, E}) &&
             add(p + "attn_output.weight", {E, E}) && add(p + "ffn_norm.weight", {E}, true) &&
             add(p + "ffn_gate.weight", {E, F}) && add(p + "ffn_up.weight", {E, F}) &&
             add(p + "ffn_down.weight", {F, E});
    }
    ok = ok && add("output_norm.weight", {E}, true);
    if (!ok) return basalt_last_error();
    if (basalt_gguf_writer_write(w, path.c_str()) != BASALT_OK) return basalt_last_error();
    if (variant != Unrunnable::kZeroDim) return "";

    // Tensor info: u64 name length, the name, u32 n_dims, u64 ne[n_dims], ... Set ne[1] of the tensor to 0.
    std::vector<char> bytes;
    {
        std::ifstream is(path, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(is), std::istreambuf_iterator<char>());
    }
    const std::string name = kZeroDimTensorName;
    const uint64_t len = name.size();
    std::string needle(sizeof(len), '\0');
    std::memcpy(needle.data(), &len, sizeof(len));  // GGUF is little-endian, as is every host Basalt builds for
    needle += name;
    const std::string_view all(bytes.data(), bytes.size());
    const size_t at = all.find(needle);
    if (at == std::string_view::npos) return "tensor info of " + name + " not found in " + path;
    const size_t ne1 = at + needle.size() + sizeof(uint32_t) + sizeof(uint64_t);
    if (ne1 + sizeof(uint64_t) > bytes.size()) return "tensor info of " + name + " is cut short";
    const uint64_t zero = 0;
    std::memcpy(bytes.data() + ne1, &zero, sizeof(zero));
    std::ofstream os(path, std::ios::binary | std::ios::trunc);
    os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return os ? "" : "cannot rewrite " + path;
}

}  // namespace test
