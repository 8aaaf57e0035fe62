// make-model: writes a random-weight llama-architecture (or t5 encoder-decoder) GGUF at a real model's shape, for
// benchmarks
// (`basalt bench`, llama.cpp's `llama-bench`) that anyone can reproduce without downloading a model.
//   make-model --shape smollm2-135m --type q8_0 -o perf-smollm2-135m-q8_0.gguf [--seed 1] [--vocab target]
// Shapes: SmolLM2-135M and -360M (tied embeddings), TinyLlama-1.1B (its own output matrix), a tiny one for tests, and
// encoder-decoder ones (t5 architecture, gated-GELU FFN, relative position buckets): T5-small (6+6 layers, tied head)
// and a PEGASUS-large shape (16+16 layers, d_model 1024, its own output matrix) plus a tiny one.
// The file carries a real tokenizer, so both engines load and run it unchanged: the vocabulary of --vocab (default
// the shipped target model's 2048 SentencePiece pieces) padded with unused "[PADn]" tokens to the shape's size.
// A client of the public C API only (basalt_gguf_writer_*, basalt_model_meta*).
#include <basalt/basalt.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "progress-bar.hpp"

namespace {

struct Shape {
    const char* name;
    uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
    float rope_base;
    bool tied;
    bool t5 = false;  // encoder-decoder (t5 architecture): n_layer encoder and n_layer decoder blocks
};

const Shape kShapes[] = {
    {"smollm2-135m", 576, 30, 9, 3, 1536, 49152, 8192, 100000.f, true},
    {"smollm2-360m", 960, 32, 15, 5, 2560, 49152, 8192, 100000.f, true},
    {"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.f, false},
    {"tiny", 64, 2, 4, 2, 192, 2560, 256, 10000.f, false},  // 2560: the shipped 2048 pieces + 512 padding
    {"t5-small", 512, 6, 8, 8, 2048, 32128, 512, 0.f, true, true},
    {"pegasus", 1024, 16, 16, 16, 4096, 96103, 1024, 0.f, false, true},
    {"t5-tiny", 64, 2, 4, 4, 128, 2560, 512, 0.f, false, true},
};

// splitmix64 + Box-Muller: reproducible normal samples independent of the platform's <random>.
struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    float normal() {
        const double u1 = (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0;
        const double u2 = static_cast<double>(next() >> 11) / 9007199254740992.0;
        return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
};

using Writer = std::unique_ptr<basalt_gguf_writer, decltype(&basalt_gguf_writer_destroy)>;

// Every 2-D tensor made here is a weight matrix that llama-quantize --pure converts (the norms are 1-D): those
// take the model's type, the rest stay f32.
bool add(basalt_gguf_writer* w, Rng& rng, const std::string& name, std::vector<int64_t> ne, basalt_dtype type,
         float std_dev, bool ones = false) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = ones ? 1.f : std_dev * rng.normal();
    const basalt_dtype t = ne.size() >= 2 ? type : BASALT_DTYPE_F32;
    return basalt_gguf_writer_add_tensor_f32(w, name.c_str(), t, ne.data(), static_cast<uint32_t>(ne.size()), x.data(),
                                             x.size()) == BASALT_OK;
}

// Copies the tokenizer of `vocab` (tokenizer.ggml.*) into the writer with its token list padded to n_vocab by unused
// tokens "[PADn]" (score -1000, the convention of llama.cpp's converters for padded vocabularies); prints why and
// returns false when it cannot.
bool add_vocabulary(basalt_gguf_writer* w, const std::string& vocab, uint32_t n_vocab) {
    basalt_model* raw = nullptr;
    if (basalt_model_load(nullptr, vocab.c_str(), nullptr, &raw) != BASALT_OK) {
        std::fprintf(stderr, "make-model: error: cannot read the vocabulary of '%s': %s\n", vocab.c_str(),
                     basalt_last_error());
        return false;
    }
    const std::unique_ptr<basalt_model, decltype(&basalt_model_free)> model(raw, &basalt_model_free);
    auto fail = [&] {
        std::fprintf(stderr, "make-model: error: copying the vocabulary of '%s': %s\n", vocab.c_str(),
                     basalt_last_error());
        return false;
    };
    size_t n_src = 0;
    if (basalt_model_meta_array_size(raw, "tokenizer.ggml.tokens", &n_src) != BASALT_OK) return fail();
    if (n_src > n_vocab) {
        std::fprintf(stderr, "make-model: error: the vocabulary of '%s' has %zu tokens, more than the shape's %u\n",
                     vocab.c_str(), n_src, n_vocab);
        return false;
    }
    std::vector<std::string> tokens(n_vocab);
    std::vector<float> scores(n_vocab, -1000.f);
    std::vector<int32_t> types(n_vocab, 5);  // GGUF token type 5: unused
    size_t n_scores = 0, n_types = 0;
    const bool has_scores = basalt_model_meta_array_size(raw, "tokenizer.ggml.scores", &n_scores) == BASALT_OK;
    const bool has_types = basalt_model_meta_array_size(raw, "tokenizer.ggml.token_type", &n_types) == BASALT_OK;
    for (size_t i = 0; i < n_vocab; ++i) {
        if (i >= n_src) {
            tokens[i] = "[PAD" + std::to_string(i) + "]";
            continue;
        }
        const char* text = nullptr;
        size_t len = 0;
        double x = 0;
        if (basalt_model_meta_array_string(raw, "tokenizer.ggml.tokens", i, &text, &len) != BASALT_OK) return fail();
        tokens[i].assign(text, len);
        if (has_scores && i < n_scores) {
            if (basalt_model_meta_array_number(raw, "tokenizer.ggml.scores", i, &x) != BASALT_OK) return fail();
            scores[i] = static_cast<float>(x);
        }
        types[i] = 1;  // normal, unless the source says otherwise
        if (has_types && i < n_types) {
            if (basalt_model_meta_array_number(raw, "tokenizer.ggml.token_type", i, &x) != BASALT_OK) return fail();
            types[i] = static_cast<int32_t>(x);
        }
    }
    std::vector<const char*> token_ptrs;
    for (const auto& t : tokens) token_ptrs.push_back(t.c_str());
    if (basalt_gguf_writer_set_array_string(w, "tokenizer.ggml.tokens", token_ptrs.data(), token_ptrs.size()) !=
            BASALT_OK ||
        basalt_gguf_writer_set_array_f32(w, "tokenizer.ggml.scores", scores.data(), scores.size()) != BASALT_OK ||
        basalt_gguf_writer_set_array_i32(w, "tokenizer.ggml.token_type", types.data(), types.size()) != BASALT_OK) {
        return fail();
    }
    // The rest of the tokenizer as the source has it: its kind and pre-tokenizer, BPE merges, special ids, flags.
    for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.pre"}) {
        const char* text = nullptr;
        if (basalt_model_meta(raw, key, &text) != BASALT_OK) continue;
        if (basalt_gguf_writer_set_string(w, key, text) != BASALT_OK) return fail();
    }
    size_t n_merges = 0;
    if (basalt_model_meta_array_size(raw, "tokenizer.ggml.merges", &n_merges) == BASALT_OK) {
        std::vector<std::string> merges(n_merges);
        for (size_t i = 0; i < n_merges; ++i) {
            const char* text = nullptr;
            size_t len = 0;
            if (basalt_model_meta_array_string(raw, "tokenizer.ggml.merges", i, &text, &len) != BASALT_OK)
                return fail();
            merges[i].assign(text, len);
        }
        std::vector<const char*> ptrs;
        for (const auto& m : merges) ptrs.push_back(m.c_str());
        if (basalt_gguf_writer_set_array_string(w, "tokenizer.ggml.merges", ptrs.data(), ptrs.size()) != BASALT_OK)
            return fail();
    }
    for (const char* key :
         {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
          "tokenizer.ggml.padding_token_id", "tokenizer.ggml.seperator_token_id"}) {
        const char* text = nullptr;
        if (basalt_model_meta(raw, key, &text) != BASALT_OK) continue;
        if (basalt_gguf_writer_set_u32(w, key, static_cast<uint32_t>(std::strtoul(text, nullptr, 10))) != BASALT_OK)
            return fail();
    }
    for (const char* key : {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token"}) {
        const char* text = nullptr;
        if (basalt_model_meta(raw, key, &text) != BASALT_OK) continue;
        if (basalt_gguf_writer_set_bool(w, key, std::string(text) == "true" ? 1 : 0) != BASALT_OK) return fail();
    }
    return true;
}

// An encoder-decoder model (t5 architecture, flan-T5 layout): per stack its own relative position bias table in block
// 0 (32 buckets), gated-GELU FFNs, cross-attention in every decoder block. Returns false after printing why.
bool write_t5(basalt_gguf_writer* raw, const Shape& s, int32_t type, const std::string& name, const std::string& vocab,
              uint64_t seed, const std::string& out) {
    const bool meta_ok = basalt_gguf_writer_set_string(raw, "general.architecture", "t5") == BASALT_OK &&
                         basalt_gguf_writer_set_string(raw, "general.name", name.c_str()) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.context_length", s.n_ctx) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.embedding_length", s.n_embd) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.block_count", s.n_layer) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.decoder_block_count", s.n_layer) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.feed_forward_length", s.n_ff) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.attention.head_count", s.n_head) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.attention.head_count_kv", s.n_head_kv) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.attention.relative_buckets_count", 32) == BASALT_OK &&
                         basalt_gguf_writer_set_f32(raw, "t5.attention.layer_norm_rms_epsilon", 1e-6f) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.decoder_start_token_id", 0) == BASALT_OK &&
                         basalt_gguf_writer_set_u32(raw, "t5.vocab_size", s.n_vocab) == BASALT_OK;
    if (!meta_ok) {
        std::fprintf(stderr, "make-model: error: %s\n", basalt_last_error());
        return false;
    }
    if (!add_vocabulary(raw, vocab, s.n_vocab)) return false;
    Rng rng{seed};
    const int64_t E = s.n_embd, hd = s.n_embd / s.n_head, kv = hd * s.n_head_kv;
    const basalt_dtype t = type;
    basalt::tools::ProgressBar bar("making " + std::string(s.name), 5 + 23 * uint64_t{s.n_layer} + (s.tied ? 0 : 1),
                                   basalt::tools::ProgressBar::Unit::kCount, "tensors");
    uint64_t n_made = 0;
    auto put = [&](const std::string& tensor, std::vector<int64_t> ne, float std_dev, bool ones = false) {
        // The relative position bias stays F32 (llama-quantize --pure keeps attn_rel_b).
        const bool ok = add(raw, rng, tensor, std::move(ne),
                            tensor.find("attn_rel_b") != std::string::npos ? BASALT_DTYPE_F32 : t, std_dev, ones);
        bar.update(++n_made);
        return ok;
    };
    auto attn = [&](const std::string& p) {
        return put(p + "q.weight", {E, E}, 0.05f) && put(p + "k.weight", {E, kv}, 0.05f) &&
               put(p + "v.weight", {E, kv}, 0.05f) && put(p + "o.weight", {E, E}, 0.05f);
    };
    auto ffn = [&](const std::string& p) {
        return put(p + "ffn_norm.weight", {E}, 0, true) && put(p + "ffn_gate.weight", {E, s.n_ff}, 0.05f) &&
               put(p + "ffn_up.weight", {E, s.n_ff}, 0.05f) && put(p + "ffn_down.weight", {s.n_ff, E}, 0.05f);
    };
    bool ok = put("token_embd.weight", {E, s.n_vocab}, 1.0f);
    for (const char* stack : {"enc", "dec"}) {
        for (uint32_t il = 0; ok && il < s.n_layer; ++il) {
            const std::string p = std::string(stack) + ".blk." + std::to_string(il) + ".";
            ok = put(p + "attn_norm.weight", {E}, 0, true) && attn(p + "attn_") &&
                 (il != 0 || put(p + "attn_rel_b.weight", {s.n_head, 32}, 0.5f));
            if (ok && std::string(stack) == "dec")
                ok = put(p + "cross_attn_norm.weight", {E}, 0, true) && attn(p + "cross_attn_");
            ok = ok && ffn(p);
        }
        ok = ok && put(std::string(stack) + ".output_norm.weight", {E}, 0, true);
    }
    if (ok && !s.tied) ok = put("output.weight", {E, s.n_vocab}, 0.05f);
    bar.finish();
    if (!ok || basalt_gguf_writer_write(raw, out.c_str()) != BASALT_OK) {
        std::fprintf(stderr, "make-model: error: %s\n", basalt_last_error());
        return false;
    }
    std::printf("wrote %s (%s, t5 %u+%u layers, %s, the vocabulary of %s padded to %u tokens)\n", out.c_str(), s.name,
                s.n_layer, s.n_layer, basalt_dtype_name(type), vocab.c_str(), s.n_vocab);
    return true;
}

int usage() {
    std::string shapes;
    for (const Shape& s : kShapes) shapes += (shapes.empty() ? "" : "|") + std::string(s.name);
    std::fprintf(stderr,
                 "usage: make-model --shape %s --type f32|f16|bf16|q8_0|q4_0|q4_k|q6_k -o OUT.gguf [--seed N] "
                 "[--vocab MODEL] [--no-progress]\n"
                 "  --vocab MODEL: the GGUF whose tokenizer the file carries, padded to the shape's vocabulary size "
                 "(default: the shipped model 'target')\n"
                 "  --no-progress: no progress bar (one is drawn on stderr only when it is a terminal)\n",
                 shapes.c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string shape_name = "smollm2-135m", type_name = "q8_0", out, vocab = "target";
    uint64_t seed = 1;
    bool no_progress = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--no-progress") {
            no_progress = true;
            continue;
        }
        if (i + 1 >= argc) return usage();
        if (a == "--shape") {
            shape_name = argv[++i];
        } else if (a == "--type") {
            type_name = argv[++i];
        } else if (a == "-o") {
            out = argv[++i];
        } else if (a == "--vocab") {
            vocab = argv[++i];
        } else if (a == "--seed") {
            const char* v = argv[++i];
            char* end = nullptr;
            errno = 0;
            seed = std::strtoull(v, &end, 10);
            if (*v < '0' || *v > '9' || *end != '\0' || errno != 0) {
                std::fprintf(stderr, "make-model: error: --seed wants a non-negative integer, not '%s'\n", v);
                return usage();
            }
        } else {
            return usage();
        }
    }
    const Shape* shape = nullptr;
    for (const auto& s : kShapes) {
        if (shape_name == s.name) shape = &s;
    }
    int32_t type = -1;
    const bool type_ok = basalt_dtype_from_name(type_name.c_str(), &type) == BASALT_OK;
    if (shape == nullptr) std::fprintf(stderr, "make-model: error: unknown shape '%s'\n", shape_name.c_str());
    if (!type_ok) std::fprintf(stderr, "make-model: error: unknown type '%s'\n", type_name.c_str());
    if (out.empty()) std::fprintf(stderr, "make-model: error: no output file (-o OUT.gguf)\n");
    if (shape == nullptr || !type_ok || out.empty()) return usage();
    basalt::tools::init_progress(no_progress);
    auto fail = [] {
        std::fprintf(stderr, "make-model: error: %s\n", basalt_last_error());
        return 1;
    };
    basalt_gguf_writer* raw = nullptr;
    if (basalt_gguf_writer_create(&raw) != BASALT_OK) return fail();
    const Writer w(raw, &basalt_gguf_writer_destroy);
    const Shape& s = *shape;
    const std::string name = std::string("random-") + s.name;
    if (s.t5) return write_t5(raw, s, type, name, vocab, seed, out) ? 0 : fail();
    const bool meta_ok =
        basalt_gguf_writer_set_string(raw, "general.architecture", "llama") == BASALT_OK &&
        basalt_gguf_writer_set_string(raw, "general.name", name.c_str()) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, "llama.context_length", s.n_ctx) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, "llama.embedding_length", s.n_embd) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, "llama.block_count", s.n_layer) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, "llama.feed_forward_length", s.n_ff) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, "llama.attention.head_count", s.n_head) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, "llama.attention.head_count_kv", s.n_head_kv) == BASALT_OK &&
        basalt_gguf_writer_set_f32(raw, "llama.rope.freq_base", s.rope_base) == BASALT_OK &&
        basalt_gguf_writer_set_f32(raw, "llama.attention.layer_norm_rms_epsilon", 1e-5f) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, "llama.vocab_size", s.n_vocab) == BASALT_OK;
    if (!meta_ok) return fail();
    if (!add_vocabulary(raw, vocab, s.n_vocab)) return 1;
    Rng rng{seed};
    const int64_t E = s.n_embd, hd = s.n_embd / s.n_head, kv = hd * s.n_head_kv;
    const basalt_dtype t = type;
    basalt::tools::ProgressBar bar("making " + std::string(s.name), 2 + 9 * uint64_t{s.n_layer} + (s.tied ? 0 : 1),
                                   basalt::tools::ProgressBar::Unit::kCount, "tensors");
    uint64_t n_made = 0;
    auto put = [&](const std::string& tensor, std::vector<int64_t> ne, float std_dev, bool ones = false) {
        const bool ok = add(raw, rng, tensor, std::move(ne), t, std_dev, ones);
        bar.update(++n_made);
        return ok;
    };
    if (!put("token_embd.weight", {E, s.n_vocab}, 1.0f)) return fail();
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const bool ok = put(p + "attn_norm.weight", {E}, 0, true) && put(p + "attn_q.weight", {E, E}, 0.05f) &&
                        put(p + "attn_k.weight", {E, kv}, 0.05f) && put(p + "attn_v.weight", {E, kv}, 0.05f) &&
                        put(p + "attn_output.weight", {E, E}, 0.05f) && put(p + "ffn_norm.weight", {E}, 0, true) &&
                        put(p + "ffn_gate.weight", {E, s.n_ff}, 0.05f) &&
                        put(p + "ffn_up.weight", {E, s.n_ff}, 0.05f) && put(p + "ffn_down.weight", {s.n_ff, E}, 0.05f);
        if (!ok) return fail();
    }
    if (!put("output_norm.weight", {E}, 0, true)) return fail();
    if (!s.tied && !put("output.weight", {E, s.n_vocab}, 0.05f)) return fail();
    bar.finish();
    if (basalt_gguf_writer_write(raw, out.c_str()) != BASALT_OK) return fail();
    std::printf("wrote %s (%s, %s, the vocabulary of %s padded to %u tokens)\n", out.c_str(), s.name,
                basalt_dtype_name(type), vocab.c_str(), s.n_vocab);
    return 0;
}
