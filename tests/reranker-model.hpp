// A small bert reranker written through the public GGUF writer (docs/embeddings.md): one layer of random weights
// (a fixed LCG), a rank head (cls.weight/bias, tanh, cls.output.weight/bias; pooling_type 4), and, given a bert
// vocabulary file, that file's WordPiece vocabulary (so text inputs tokenize as tiny-bert's do). The head's weights
// come back to the caller, which computes the expected scores on the host.
#pragma once

#include <basalt/basalt.h>

#include <cstdint>
#include <string>
#include <vector>

namespace test {

struct RerankerHead {
    uint32_t n_embd = 32;
    std::vector<float> cls_w, cls_b, out_w, out_b;  // cls_w[o * n_embd + i]; out_w [n_embd]; out_b [1]
};

// Deterministic values in [offset - scale/2, offset + scale/2).
struct Lcg {
    uint64_t s = 12345;
    std::vector<float> values(size_t n, float scale, float offset = 0.f) {
        std::vector<float> v(n);
        for (float& x : v) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            x = offset +
                scale * static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ULL << 24) - 0.5);
        }
        return v;
    }
};

// Copies the bert vocabulary of the model file `vocab_from` into w; returns "" or what failed, and its size.
inline std::string copy_bert_vocab(basalt_gguf_writer* w, const std::string& vocab_from, uint32_t& n_vocab) {
    basalt_model* m = nullptr;
    if (basalt_model_load(nullptr, vocab_from.c_str(), nullptr, &m) != BASALT_OK) return basalt_last_error();
    std::string why;
    size_t n = 0;
    if (basalt_model_meta_array_size(m, "tokenizer.ggml.tokens", &n) != BASALT_OK) why = basalt_last_error();
    std::vector<std::string> tokens(n);
    std::vector<int32_t> types(n);
    for (size_t i = 0; why.empty() && i < n; ++i) {
        const char* s = nullptr;
        size_t len = 0;
        double t = 0;
        if (basalt_model_meta_array_string(m, "tokenizer.ggml.tokens", i, &s, &len) != BASALT_OK ||
            basalt_model_meta_array_number(m, "tokenizer.ggml.token_type", i, &t) != BASALT_OK) {
            why = basalt_last_error();
            break;
        }
        tokens[i].assign(s, len);
        types[i] = static_cast<int32_t>(t);
    }
    std::vector<const char*> ptrs;
    for (const auto& t : tokens) ptrs.push_back(t.c_str());
    if (why.empty() &&
        (basalt_gguf_writer_set_string(w, "tokenizer.ggml.model", "bert") != BASALT_OK ||
         basalt_gguf_writer_set_array_string(w, "tokenizer.ggml.tokens", ptrs.data(), ptrs.size()) != BASALT_OK ||
         basalt_gguf_writer_set_array_i32(w, "tokenizer.ggml.token_type", types.data(), types.size()) != BASALT_OK))
        why = basalt_last_error();
    for (const char* key :
         {"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.padding_token_id",
          "tokenizer.ggml.cls_token_id", "tokenizer.ggml.mask_token_id"}) {
        const char* v = nullptr;
        if (why.empty() && basalt_model_meta(m, key, &v) == BASALT_OK &&
            basalt_gguf_writer_set_u32(w, key, static_cast<uint32_t>(std::stoul(v))) != BASALT_OK)
            why = basalt_last_error();
    }
    basalt_model_free(m);
    n_vocab = static_cast<uint32_t>(n);
    return why;
}

// Writes the reranker to path (vocab_from "": no vocabulary, 64 token ids); returns "" or what failed.
inline std::string write_reranker(const std::string& path, const std::string& vocab_from, RerankerHead& head) {
    const int64_t E = head.n_embd, F = 64, P = 64;
    basalt_gguf_writer* w = nullptr;
    if (basalt_gguf_writer_create(&w) != BASALT_OK) return basalt_last_error();
    std::string why;
    uint32_t n_vocab = 64;
    if (!vocab_from.empty()) why = copy_bert_vocab(w, vocab_from, n_vocab);
    const int64_t V = n_vocab;
    auto ok = [&](basalt_status st) {
        if (st != BASALT_OK && why.empty()) why = basalt_last_error();
    };
    ok(basalt_gguf_writer_set_string(w, "general.architecture", "bert"));
    ok(basalt_gguf_writer_set_u32(w, "bert.block_count", 1));
    ok(basalt_gguf_writer_set_u32(w, "bert.embedding_length", static_cast<uint32_t>(E)));
    ok(basalt_gguf_writer_set_u32(w, "bert.attention.head_count", 2));
    ok(basalt_gguf_writer_set_u32(w, "bert.feed_forward_length", static_cast<uint32_t>(F)));
    ok(basalt_gguf_writer_set_u32(w, "bert.context_length", static_cast<uint32_t>(P)));
    ok(basalt_gguf_writer_set_f32(w, "bert.attention.layer_norm_epsilon", 1e-12f));
    ok(basalt_gguf_writer_set_u32(w, "bert.pooling_type", 4));
    Lcg rng;
    auto add = [&](const std::string& name, std::vector<int64_t> ne, const std::vector<float>& v) {
        ok(basalt_gguf_writer_add_tensor_f32(w, name.c_str(), BASALT_DTYPE_F32, ne.data(),
                                             static_cast<uint32_t>(ne.size()), v.data(), v.size()));
    };
    add("token_embd.weight", {E, V}, rng.values(static_cast<size_t>(E * V), 2.f));
    add("token_types.weight", {E, 2}, rng.values(static_cast<size_t>(E * 2), 0.2f));
    add("position_embd.weight", {E, P}, rng.values(static_cast<size_t>(E * P), 0.2f));
    add("token_embd_norm.weight", {E}, rng.values(static_cast<size_t>(E), 0.2f, 1.f));
    add("token_embd_norm.bias", {E}, rng.values(static_cast<size_t>(E), 0.2f));
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
        add(std::string("blk.0.") + m + ".weight", {E, E}, rng.values(static_cast<size_t>(E * E), 0.4f));
        add(std::string("blk.0.") + m + ".bias", {E}, rng.values(static_cast<size_t>(E), 0.1f));
    }
    for (const char* n : {"attn_output_norm", "layer_output_norm"}) {
        add(std::string("blk.0.") + n + ".weight", {E}, rng.values(static_cast<size_t>(E), 0.2f, 1.f));
        add(std::string("blk.0.") + n + ".bias", {E}, rng.values(static_cast<size_t>(E), 0.1f));
    }
    add("blk.0.ffn_up.weight", {E, F}, rng.values(static_cast<size_t>(E * F), 0.4f));
    add("blk.0.ffn_up.bias", {F}, rng.values(static_cast<size_t>(F), 0.1f));
    add("blk.0.ffn_down.weight", {F, E}, rng.values(static_cast<size_t>(F * E), 0.4f));
    add("blk.0.ffn_down.bias", {E}, rng.values(static_cast<size_t>(E), 0.1f));
    head.cls_w = rng.values(static_cast<size_t>(E * E), 0.6f);
    head.cls_b = rng.values(static_cast<size_t>(E), 0.2f);
    head.out_w = rng.values(static_cast<size_t>(E), 1.f);
    head.out_b = rng.values(1, 1.f);
    add("cls.weight", {E, E}, head.cls_w);
    add("cls.bias", {E}, head.cls_b);
    add("cls.output.weight", {E, 1}, head.out_w);
    add("cls.output.bias", {1}, head.out_b);
    if (why.empty()) ok(basalt_gguf_writer_write(w, path.c_str()));
    basalt_gguf_writer_destroy(w);
    return why;
}

}  // namespace test
