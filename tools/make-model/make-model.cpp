// make-model: writes a random-weight GGUF at a real model's shape (llama, qwen3, gemma3, smollm3, phi3, qwen35, gemma4,
// gpt-oss, t5 or bert), for benchmarks (`basalt bench`, llama.cpp's `llama-bench`) that anyone can reproduce without
// downloading a model.
//   make-model --shape smollm2-135m --type q8_0 -o perf-smollm2-135m-q8_0.gguf [--seed 1] [--vocab target]
// Shapes: SmolLM2-135M and -360M (tied embeddings), TinyLlama-1.1B (its own output matrix), a tiny one for tests, and
// encoder-decoder ones (t5 architecture, gated-GELU FFN, relative position buckets): T5-small (6+6 layers, tied head)
// and a PEGASUS-large shape (16+16 layers, d_model 1024, its own output matrix) plus a tiny one; embedding models
// (bert): all-MiniLM-L6 and bge-small, which need a WordPiece --vocab.
// The file carries a real tokenizer, so both engines load and run it unchanged: the vocabulary of --vocab (default
// the shipped target model's 2048 SentencePiece pieces) padded with unused "[PADn]" tokens to the shape's size.
// A client of the public C API only (basalt_gguf_writer_*, basalt_model_meta*).
#include <basalt/basalt.h>

#include <algorithm>
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
    // Decoder-only architectures other than llama, with the tensors and keys llama.cpp's converter writes for them.
    const char* arch = "llama";   // general.architecture
    uint32_t head_dim = 0;        // attention.key_length/value_length (0: n_embd / n_head, keys not written)
    uint32_t n_rot = 0;           // rope.dimension_count when it is not the head dimension (partial rotary)
    float eps = 1e-5f;            // attention.layer_norm_rms_epsilon
    bool qk_norm = false;         // qwen3, gemma3: per-head RMS norm weights attn_q_norm / attn_k_norm [head_dim]
    bool post_norms = false;      // gemma3: post_attention_norm and post_ffw_norm
    bool fused = false;           // phi3: attn_qkv [q | k | v] and ffn_up [gate | up]
    uint32_t sliding_window = 0;  // attention.sliding_window (gemma3; phi3 writes its value as is)
    float rope_linear = 0.f;      // gemma3 4B+: rope.scaling.type linear with this factor (global layers)
    bool llama3_rope = false;     // Llama 3.2: rope_freqs.weight (factor 32, low/high 1/4, original context 8192)
    uint32_t longrope_ctx = 0;    // phi3 longrope: rope_factors_long/short.weight, original_context_length
    // qwen35 (hybrid): Gated DeltaNet layers (ssm.*: conv kernel, key heads of ssm_head, value heads of ssm_head)
    // with every 4th layer gated full attention (attn_q = per head [q | gate]); 0: not a hybrid shape.
    uint32_t ssm_k_heads = 0, ssm_v_heads = 0, ssm_head = 0, ssm_conv = 4;
    // gemma4 (dense layout, llama.cpp's conversion/gemma.py): every full_every-th layer is a full-attention layer with
    // head size head_dim_full and n_head_kv_full K/V heads, no attn_v (V is K's projection) and proportional rope
    // (rope_freqs.weight: 1 for a quarter of the pairs, 1e30 for the rest) at rope_base; the others slide with
    // head_dim / n_head_kv at base 1e4; per-layer layer_output_scale; final-logit soft-cap 30. 0: not gemma4.
    uint32_t head_dim_full = 0;
    uint32_t n_head_kv_full = 0;
    uint32_t full_every = 0;
    // bert (embedding models, docs/embeddings.md): post-LN encoder with biases, learned positions, token types; the
    // vocabulary must be a WordPiece one (--vocab); pooling_type as the converter writes it (1 mean, 2 cls).
    bool bert = false;
    uint32_t pooling = 0;
    // gpt-oss (llama.cpp's conversion of GptOssForCausalLM): q/k/v/o with biases, learned attention sinks, sliding
    // window on even layers, YaRN (factor 32 over 4096), an MoE block on every layer (router with bias, n_expert
    // experts of n_ff with biases, n_expert_used per token), untied output. --type mxfp4 makes the expert matrices
    // MXFP4 and the other matrices Q8_0, as the published files have them. 0: not gpt-oss.
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    // gemma4's small layouts (E2B, E4B): per-layer embeddings of width `ple` (embedding_length_per_layer_input; 0:
    // none); the last `shared_kv` layers attend over earlier layers' K/V (attention.shared_kv_layers: no attn_k,
    // attn_v, attn_k_norm of their own) with a twice as wide FFN when `double_wide` (feed_forward_length per layer);
    // `full_attn_v`: full layers have attn_v too (attention_k_eq_v false).
    uint32_t ple = 0;
    uint32_t shared_kv = 0;
    bool double_wide = false;
    bool full_attn_v = false;
};

const Shape kShapes[] = {
    {"smollm2-135m", 576, 30, 9, 3, 1536, 49152, 8192, 100000.f, true},
    {"smollm2-360m", 960, 32, 15, 5, 2560, 49152, 8192, 100000.f, true},
    {"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.f, false},
    {"tiny", 64, 2, 4, 2, 192, 2560, 256, 10000.f, false},  // 2560: the shipped 2048 pieces + 512 padding
    {"t5-small", 512, 6, 8, 8, 2048, 32128, 512, 0.f, true, true},
    {"pegasus", 1024, 16, 16, 16, 4096, 96103, 1024, 0.f, false, true},
    {"t5-tiny", 64, 2, 4, 4, 128, 2560, 512, 0.f, false, true},
    // Today's popular downloads (issue 29): random weights at their shapes, loadable by llama.cpp.
    {.name = "llama3.2-1b",
     .n_embd = 2048,
     .n_layer = 16,
     .n_head = 32,
     .n_head_kv = 8,
     .n_ff = 8192,
     .n_vocab = 128256,
     .n_ctx = 131072,
     .rope_base = 500000.f,
     .tied = true,
     .llama3_rope = true},
    {.name = "qwen3-0.6b",
     .n_embd = 1024,
     .n_layer = 28,
     .n_head = 16,
     .n_head_kv = 8,
     .n_ff = 3072,
     .n_vocab = 151936,
     .n_ctx = 40960,
     .rope_base = 1000000.f,
     .tied = true,
     .arch = "qwen3",
     .head_dim = 128,
     .eps = 1e-6f,
     .qk_norm = true},
    {.name = "gemma3-1b",
     .n_embd = 1152,
     .n_layer = 26,
     .n_head = 4,
     .n_head_kv = 1,
     .n_ff = 6912,
     .n_vocab = 262144,
     .n_ctx = 32768,
     .rope_base = 1000000.f,
     .tied = true,
     .arch = "gemma3",
     .head_dim = 256,
     .eps = 1e-6f,
     .qk_norm = true,
     .post_norms = true,
     .sliding_window = 512},
    {.name = "gemma3-4b",
     .n_embd = 2560,
     .n_layer = 34,
     .n_head = 8,
     .n_head_kv = 4,
     .n_ff = 10240,
     .n_vocab = 262208,
     .n_ctx = 131072,
     .rope_base = 1000000.f,
     .tied = true,
     .arch = "gemma3",
     .head_dim = 256,
     .eps = 1e-6f,
     .qk_norm = true,
     .post_norms = true,
     .sliding_window = 1024,
     .rope_linear = 8.f},
    {.name = "smollm3-3b",
     .n_embd = 2048,
     .n_layer = 36,
     .n_head = 16,
     .n_head_kv = 4,
     .n_ff = 11008,
     .n_vocab = 128256,
     .n_ctx = 65536,
     .rope_base = 5000000.f,
     .tied = true,
     .arch = "smollm3",
     .eps = 1e-6f},
    {.name = "phi4-mini",
     .n_embd = 3072,
     .n_layer = 32,
     .n_head = 24,
     .n_head_kv = 8,
     .n_ff = 8192,
     .n_vocab = 200064,
     .n_ctx = 131072,
     .rope_base = 10000.f,
     .tied = true,
     .arch = "phi3",
     .n_rot = 96,
     .fused = true,
     .sliding_window = 262144,
     .longrope_ctx = 4096},
    // Qwen3.5-0.8B (issue 32): 24 layers, 18 of them Gated DeltaNet (16 key and 16 value heads of 128, conv 4), every
    // 4th gated attention (8 heads of 256, 2 KV heads, rope on 64 of 256 dims, base 1e7), FFN 3584, tied output.
    {.name = "qwen35-0.8b",
     .n_embd = 1024,
     .n_layer = 24,
     .n_head = 8,
     .n_head_kv = 2,
     .n_ff = 3584,
     .n_vocab = 248320,
     .n_ctx = 262144,
     .rope_base = 10000000.f,
     .tied = true,
     .arch = "qwen35",
     .head_dim = 256,
     .n_rot = 64,
     .eps = 1e-6f,
     .qk_norm = true,
     .ssm_k_heads = 16,
     .ssm_v_heads = 16,
     .ssm_head = 128},
    // The same width with every layer attention (qwen3's block): the baseline of the DeltaNet-vs-attention decode cost.
    {.name = "qwen35-0.8b-attn",
     .n_embd = 1024,
     .n_layer = 24,
     .n_head = 8,
     .n_head_kv = 2,
     .n_ff = 3584,
     .n_vocab = 248320,
     .n_ctx = 262144,
     .rope_base = 10000000.f,
     .tied = true,
     .arch = "qwen3",
     .head_dim = 256,
     .eps = 1e-6f,
     .qk_norm = true},
    // Gemma 4 31B, the published dense layout (the E2B/E4B shapes add per-layer embeddings and KV shared between
    // layers, which Basalt refuses naming the key): 60 layers, every 6th global.
    {.name = "gemma4-31b",
     .n_embd = 5376,
     .n_layer = 60,
     .n_head = 32,
     .n_head_kv = 16,
     .n_ff = 21504,
     .n_vocab = 262144,
     .n_ctx = 262144,
     .rope_base = 1000000.f,
     .tied = true,
     .arch = "gemma4",
     .head_dim = 256,
     .eps = 1e-6f,
     .qk_norm = true,
     .post_norms = true,
     .sliding_window = 1024,
     .head_dim_full = 512,
     .n_head_kv_full = 4,
     .full_every = 6},
    // Gemma 4 E2B (google/gemma-4-E2B-it's text config): 35 layers, every 5th global (heads of 512, sliding ones 256,
    // 8 query heads and 1 K/V head on both), attn_v everywhere, per-layer embeddings of 256, the last 20 layers
    // sharing the K/V of layers 13 (sliding) and 14 (full) with a double-wide MLP (6144, those 12288), window 512.
    {.name = "gemma4-e2b",
     .n_embd = 1536,
     .n_layer = 35,
     .n_head = 8,
     .n_head_kv = 1,
     .n_ff = 6144,
     .n_vocab = 262144,
     .n_ctx = 131072,
     .rope_base = 1000000.f,
     .tied = true,
     .arch = "gemma4",
     .head_dim = 256,
     .eps = 1e-6f,
     .qk_norm = true,
     .post_norms = true,
     .sliding_window = 512,
     .head_dim_full = 512,
     .n_head_kv_full = 1,
     .full_every = 5,
     .ple = 256,
     .shared_kv = 20,
     .double_wide = true,
     .full_attn_v = true},
    // Its layout at test size (CTest writes and runs it): 2 sliding + 1 full, the last 3 of 9 layers sharing.
    {.name = "gemma4-e2b-tiny",
     .n_embd = 64,
     .n_layer = 9,
     .n_head = 4,
     .n_head_kv = 2,
     .n_ff = 96,
     .n_vocab = 2560,
     .n_ctx = 512,
     .rope_base = 1000000.f,
     .tied = true,
     .arch = "gemma4",
     .head_dim = 16,
     .eps = 1e-6f,
     .qk_norm = true,
     .post_norms = true,
     .sliding_window = 8,
     .head_dim_full = 32,
     .n_head_kv_full = 2,
     .full_every = 3,
     .ple = 32,
     .shared_kv = 3,
     .double_wide = true,
     .full_attn_v = true},
    // Its layout at test size (CTest writes and runs it).
    {.name = "gemma4-tiny",
     .n_embd = 64,
     .n_layer = 6,
     .n_head = 4,
     .n_head_kv = 2,
     .n_ff = 128,
     .n_vocab = 2560,
     .n_ctx = 512,
     .rope_base = 1000000.f,
     .tied = true,
     .arch = "gemma4",
     .head_dim = 16,
     .eps = 1e-6f,
     .qk_norm = true,
     .post_norms = true,
     .sliding_window = 8,
     .head_dim_full = 32,
     .n_head_kv_full = 1,
     .full_every = 3},
    // Embedding models (issue 33): sentence-transformers/all-MiniLM-L6-v2 (mean pooling) and BAAI/bge-small-en-v1.5
    // (cls pooling), both BERT with a 30522-token WordPiece vocabulary.
    {.name = "all-minilm-l6",
     .n_embd = 384,
     .n_layer = 6,
     .n_head = 12,
     .n_head_kv = 12,
     .n_ff = 1536,
     .n_vocab = 30522,
     .n_ctx = 512,
     .rope_base = 0.f,
     .tied = false,
     .arch = "bert",
     .eps = 1e-12f,
     .bert = true,
     .pooling = 1},
    {.name = "bge-small",
     .n_embd = 384,
     .n_layer = 12,
     .n_head = 12,
     .n_head_kv = 12,
     .n_ff = 1536,
     .n_vocab = 30522,
     .n_ctx = 512,
     .rope_base = 0.f,
     .tied = false,
     .arch = "bert",
     .eps = 1e-12f,
     .bert = true,
     .pooling = 2},
    // openai/gpt-oss-20b (issue 32): 24 layers of 2880, 64 query heads of 64 and 8 K/V heads, 32 experts of 2880 with 4
    // used per token, window 128 on every other layer, vocabulary 201088. About 12 GiB with --type mxfp4.
    {.name = "gpt-oss-20b",
     .n_embd = 2880,
     .n_layer = 24,
     .n_head = 64,
     .n_head_kv = 8,
     .n_ff = 2880,
     .n_vocab = 201088,
     .n_ctx = 131072,
     .rope_base = 150000.f,
     .tied = false,
     .arch = "gpt-oss",
     .head_dim = 64,
     .sliding_window = 128,
     .n_expert = 32,
     .n_expert_used = 4},
    // Its layout at test size (CTest writes and runs it).
    {.name = "gpt-oss-tiny",
     .n_embd = 64,
     .n_layer = 2,
     .n_head = 4,
     .n_head_kv = 2,
     .n_ff = 64,
     .n_vocab = 2560,
     .n_ctx = 4096,
     .rope_base = 150000.f,
     .tied = false,
     .arch = "gpt-oss",
     .head_dim = 16,
     .sliding_window = 8,
     .n_expert = 4,
     .n_expert_used = 2},
};

// Llama 3.1/3.2 frequency factors (what llama.cpp's converter computes from rope_scaling): per rotated pair i with
// wavelength 2 pi / base^(-2i/d), 1 above the high-frequency wavelength, `factor` past the low-frequency one, a smooth
// blend between.
std::vector<float> llama3_factors(uint32_t head_dim, float base) {
    const double factor = 32, low = 1, high = 4, old_ctx = 8192;
    std::vector<float> f;
    for (uint32_t i = 0; i < head_dim; i += 2) {
        const double wavelen = 2 * M_PI / std::pow(static_cast<double>(base), -static_cast<double>(i) / head_dim);
        if (wavelen < old_ctx / high) {
            f.push_back(1.f);
        } else if (wavelen > old_ctx / low) {
            f.push_back(static_cast<float>(factor));
        } else {
            const double smooth = (old_ctx / wavelen - low) / (high - low);
            f.push_back(static_cast<float>(1 / ((1 - smooth) / factor + smooth)));
        }
    }
    return f;
}

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
// The values are drawn a batch of rows at a time (basalt_gguf_writer_add_tensor_rows), in order: the same values as
// one f32 array, without holding a large table (gemma4-e2b's per-layer embeddings are 9.4 GB as f32) in memory.
bool add(basalt_gguf_writer* w, Rng& rng, const std::string& name, std::vector<int64_t> ne, basalt_dtype type,
         float std_dev, bool ones = false) {
    struct Draw {
        Rng* rng;
        int64_t row;
        float std_dev;
        bool ones;
    } draw{&rng, ne[0], std_dev, ones};
    const basalt_dtype t = ne.size() >= 2 ? type : BASALT_DTYPE_F32;
    auto fill = [](void* user, int64_t, int64_t n_rows, float* out) -> int32_t {
        const auto* d = static_cast<const Draw*>(user);
        for (int64_t i = 0; i < n_rows * d->row; ++i) out[i] = d->ones ? 1.f : d->std_dev * d->rng->normal();
        return 0;
    };
    return basalt_gguf_writer_add_tensor_rows(w, name.c_str(), t, ne.data(), static_cast<uint32_t>(ne.size()), fill,
                                              &draw) == BASALT_OK;
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
          "tokenizer.ggml.padding_token_id", "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.cls_token_id",
          "tokenizer.ggml.mask_token_id", "tokenizer.ggml.token_type_count"}) {
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

// A bert embedding model (the layout of llama.cpp's BERT converter): token, token-type and position embeddings with
// a LayerNorm, post-LN blocks with q/k/v/o and FFN biases, no output head. Returns false after printing why.
bool write_bert(basalt_gguf_writer* raw, const Shape& s, int32_t type, const std::string& name,
                const std::string& vocab, uint64_t seed, const std::string& out) {
    const std::string A = std::string(s.arch) + ".";
    auto key = [&](const char* k) { return A + k; };
    const bool meta_ok =
        basalt_gguf_writer_set_string(raw, "general.architecture", s.arch) == BASALT_OK &&
        basalt_gguf_writer_set_string(raw, "general.name", name.c_str()) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("context_length").c_str(), s.n_ctx) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("embedding_length").c_str(), s.n_embd) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("feed_forward_length").c_str(), s.n_ff) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("block_count").c_str(), s.n_layer) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("attention.head_count").c_str(), s.n_head) == BASALT_OK &&
        basalt_gguf_writer_set_f32(raw, key("attention.layer_norm_epsilon").c_str(), s.eps) == BASALT_OK &&
        basalt_gguf_writer_set_bool(raw, key("attention.causal").c_str(), 0) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("pooling_type").c_str(), s.pooling) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, "tokenizer.ggml.token_type_count", 2) == BASALT_OK;
    if (!meta_ok) return false;
    std::string kind;
    {
        basalt_model* src = nullptr;
        const char* text = nullptr;
        if (basalt_model_load(nullptr, vocab.c_str(), nullptr, &src) == BASALT_OK &&
            basalt_model_meta(src, "tokenizer.ggml.model", &text) == BASALT_OK) {
            kind = text;
        }
        basalt_model_free(src);
    }
    if (kind != "bert") {
        std::fprintf(stderr,
                     "make-model: error: shape '%s' needs a WordPiece vocabulary (tokenizer.ggml.model 'bert'): "
                     "--vocab MODEL, e.g. ../shared/testdata/golden/models/tiny-bert-f32.gguf\n",
                     s.name);
        return false;
    }
    if (!add_vocabulary(raw, vocab, s.n_vocab)) return false;
    Rng rng{seed};
    const int64_t E = s.n_embd, F = s.n_ff;
    basalt::tools::ProgressBar bar("making " + std::string(s.name), 5 + 16 * uint64_t{s.n_layer},
                                   basalt::tools::ProgressBar::Unit::kCount, "tensors");
    uint64_t n_made = 0;
    auto put = [&](const std::string& tensor, std::vector<int64_t> ne, float std_dev, bool ones = false,
                   int32_t as = -1) {
        const bool ok = add(raw, rng, tensor, std::move(ne), as >= 0 ? as : type, std_dev, ones);
        bar.update(++n_made);
        return ok;
    };
    // Biases and norm shifts small, weights as the decoder shapes have them: the activations stay O(1). Token types
    // and positions stay F32, as the converter keeps them.
    bool ok = put("token_embd.weight", {E, s.n_vocab}, 1.0f) &&
              put("token_types.weight", {E, 2}, 0.1f, false, BASALT_DTYPE_F32) &&
              put("position_embd.weight", {E, s.n_ctx}, 0.1f, false, BASALT_DTYPE_F32) &&
              put("token_embd_norm.weight", {E}, 0, true) && put("token_embd_norm.bias", {E}, 0.01f);
    for (uint32_t il = 0; il < s.n_layer && ok; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
            ok = ok && put(p + m + ".weight", {E, E}, 0.05f) && put(p + m + ".bias", {E}, 0.01f);
        }
        ok = ok && put(p + "attn_output_norm.weight", {E}, 0, true) && put(p + "attn_output_norm.bias", {E}, 0.01f) &&
             put(p + "ffn_up.weight", {E, F}, 0.05f) && put(p + "ffn_up.bias", {F}, 0.01f) &&
             put(p + "ffn_down.weight", {F, E}, 0.05f) && put(p + "ffn_down.bias", {E}, 0.01f) &&
             put(p + "layer_output_norm.weight", {E}, 0, true) && put(p + "layer_output_norm.bias", {E}, 0.01f);
    }
    if (!ok) return false;
    bar.finish();
    if (basalt_gguf_writer_write(raw, out.c_str()) != BASALT_OK) return false;
    std::printf("wrote %s (%s, %s, the vocabulary of %s padded to %u tokens)\n", out.c_str(), s.name,
                basalt_dtype_name(type), vocab.c_str(), s.n_vocab);
    return true;
}

// The keys every decoder-only shape writes, under its architecture's prefix: names, sizes, rope base, norm epsilon,
// vocabulary size, and the head sizes when the shape gives them. Returns false on a writer error.
bool set_decoder_keys(basalt_gguf_writer* raw, const Shape& s, const std::string& name) {
    const std::string A = std::string(s.arch) + ".";
    auto key = [&](const char* k) { return A + k; };
    bool ok = basalt_gguf_writer_set_string(raw, "general.architecture", s.arch) == BASALT_OK &&
              basalt_gguf_writer_set_string(raw, "general.name", name.c_str()) == BASALT_OK &&
              basalt_gguf_writer_set_u32(raw, key("context_length").c_str(), s.n_ctx) == BASALT_OK &&
              basalt_gguf_writer_set_u32(raw, key("embedding_length").c_str(), s.n_embd) == BASALT_OK &&
              basalt_gguf_writer_set_u32(raw, key("block_count").c_str(), s.n_layer) == BASALT_OK &&
              basalt_gguf_writer_set_u32(raw, key("feed_forward_length").c_str(), s.n_ff) == BASALT_OK &&
              basalt_gguf_writer_set_u32(raw, key("attention.head_count").c_str(), s.n_head) == BASALT_OK &&
              basalt_gguf_writer_set_u32(raw, key("attention.head_count_kv").c_str(), s.n_head_kv) == BASALT_OK &&
              basalt_gguf_writer_set_f32(raw, key("rope.freq_base").c_str(), s.rope_base) == BASALT_OK &&
              basalt_gguf_writer_set_f32(raw, key("attention.layer_norm_rms_epsilon").c_str(), s.eps) == BASALT_OK &&
              basalt_gguf_writer_set_u32(raw, key("vocab_size").c_str(), s.n_vocab) == BASALT_OK;
    if (ok && s.head_dim != 0) {
        ok = basalt_gguf_writer_set_u32(raw, key("attention.key_length").c_str(), s.head_dim) == BASALT_OK &&
             basalt_gguf_writer_set_u32(raw, key("attention.value_length").c_str(), s.head_dim) == BASALT_OK;
    }
    return ok;
}

// A gpt-oss model (the tensors and keys of llama.cpp's gpt-oss conversion; see Shape::n_expert). The router, the
// biases and the sinks stay F32, as llama-quantize keeps them. Returns false after printing why.
bool write_gpt_oss(basalt_gguf_writer* raw, const Shape& s, int32_t type, const std::string& name,
                   const std::string& vocab, uint64_t seed, const std::string& out) {
    const std::string A = std::string(s.arch) + ".";
    auto key = [&](const char* k) { return A + k; };
    const bool meta_ok =
        set_decoder_keys(raw, s, name) &&
        basalt_gguf_writer_set_u32(raw, key("attention.sliding_window").c_str(), s.sliding_window) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("expert_count").c_str(), s.n_expert) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("expert_used_count").c_str(), s.n_expert_used) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("expert_feed_forward_length").c_str(), s.n_ff) == BASALT_OK &&
        basalt_gguf_writer_set_string(raw, key("rope.scaling.type").c_str(), "yarn") == BASALT_OK &&
        basalt_gguf_writer_set_f32(raw, key("rope.scaling.factor").c_str(), 32.f) == BASALT_OK &&
        basalt_gguf_writer_set_u32(raw, key("rope.scaling.original_context_length").c_str(), 4096) == BASALT_OK;
    if (!meta_ok) return false;
    if (!add_vocabulary(raw, vocab, s.n_vocab)) return false;
    Rng rng{seed};
    const int64_t E = s.n_embd, F = s.n_ff, X = s.n_expert, q = int64_t{s.head_dim} * s.n_head,
                  kv = int64_t{s.head_dim} * s.n_head_kv;
    const auto experts = static_cast<basalt_dtype>(type);
    const basalt_dtype dense = type == BASALT_DTYPE_MXFP4 ? BASALT_DTYPE_Q8_0 : experts;
    basalt::tools::ProgressBar bar("making " + std::string(s.name), 3 + 21 * uint64_t{s.n_layer},
                                   basalt::tools::ProgressBar::Unit::kCount, "tensors");
    uint64_t n_made = 0;
    auto put = [&](const std::string& tensor, std::vector<int64_t> ne, basalt_dtype as, float std_dev,
                   bool ones = false) {
        const bool ok = add(raw, rng, tensor, std::move(ne), as, std_dev, ones);
        bar.update(++n_made);
        return ok;
    };
    const basalt_dtype f32 = BASALT_DTYPE_F32;
    bool ok = put("token_embd.weight", {E, s.n_vocab}, dense, 1.0f);
    for (uint32_t il = 0; il < s.n_layer && ok; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        ok = put(p + "attn_norm.weight", {E}, f32, 0, true) && put(p + "attn_q.weight", {E, q}, dense, 0.05f) &&
             put(p + "attn_q.bias", {q}, f32, 0.1f) && put(p + "attn_k.weight", {E, kv}, dense, 0.05f) &&
             put(p + "attn_k.bias", {kv}, f32, 0.1f) && put(p + "attn_v.weight", {E, kv}, dense, 0.05f) &&
             put(p + "attn_v.bias", {kv}, f32, 0.1f) && put(p + "attn_output.weight", {q, E}, dense, 0.05f) &&
             put(p + "attn_output.bias", {E}, f32, 0.05f) && put(p + "attn_sinks.weight", {s.n_head}, f32, 1.0f) &&
             put(p + "post_attention_norm.weight", {E}, f32, 0, true) &&
             put(p + "ffn_gate_inp.weight", {E, X}, f32, 0.05f) && put(p + "ffn_gate_inp.bias", {X}, f32, 0.2f) &&
             put(p + "ffn_gate_exps.weight", {E, F, X}, experts, 0.05f) &&
             put(p + "ffn_gate_exps.bias", {F, X}, f32, 0.1f) &&
             put(p + "ffn_up_exps.weight", {E, F, X}, experts, 0.05f) &&
             put(p + "ffn_up_exps.bias", {F, X}, f32, 0.1f) &&
             put(p + "ffn_down_exps.weight", {F, E, X}, experts, 0.05f) &&
             put(p + "ffn_down_exps.bias", {E, X}, f32, 0.05f);
    }
    ok = ok && put("output_norm.weight", {E}, f32, 0, true) && put("output.weight", {E, s.n_vocab}, dense, 0.05f);
    if (!ok) return false;
    bar.finish();
    if (basalt_gguf_writer_write(raw, out.c_str()) != BASALT_OK) return false;
    std::printf("wrote %s (%s, experts %s, other matrices %s, the vocabulary of %s padded to %u tokens)\n", out.c_str(),
                s.name, basalt_dtype_name(experts), basalt_dtype_name(dense), vocab.c_str(), s.n_vocab);
    return true;
}

int usage() {
    std::string shapes;
    for (const Shape& s : kShapes) shapes += (shapes.empty() ? "" : "|") + std::string(s.name);
    std::fprintf(stderr,
                 "usage: make-model --shape %s --type f32|f16|bf16|q8_0|q4_0|q4_k|q6_k|mxfp4 -o OUT.gguf [--seed N] "
                 "[--vocab MODEL] [--layers N] [--no-progress]\n"
                 "  --vocab MODEL: the GGUF whose tokenizer the file carries, padded to the shape's vocabulary size "
                 "(default: the shipped model 'target')\n"
                 "  --layers N: only the shape's first N blocks (per-layer benchmarks at a real width)\n"
                 "  --no-progress: no progress bar (one is drawn on stderr only when it is a terminal)\n",
                 shapes.c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string shape_name = "smollm2-135m", type_name = "q8_0", out, vocab = "target";
    uint64_t seed = 1;
    uint32_t layers = 0;  // --layers: 0 the shape's own count
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
        } else if (a == "--layers") {
            const char* v = argv[++i];
            char* end = nullptr;
            const unsigned long n = std::strtoul(v, &end, 10);
            if (*v < '1' || *v > '9' || *end != '\0' || n > 1000) {
                std::fprintf(stderr, "make-model: error: --layers wants a layer count in 1..1000, not '%s'\n", v);
                return usage();
            }
            layers = static_cast<uint32_t>(n);
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
    Shape s = *shape;
    if (layers != 0) s.n_layer = layers;  // the shape's first `layers` blocks (per-layer benchmarks)
    // (gemma4: of those, the ones past the shape's last K/V-computing layer share)
    const uint32_t first_shared = shape->n_layer - shape->shared_kv;
    s.shared_kv = s.n_layer > first_shared ? s.n_layer - first_shared : 0;
    const std::string name = std::string("random-") + s.name;
    if (s.t5) return write_t5(raw, s, type, name, vocab, seed, out) ? 0 : fail();
    if (s.bert) return write_bert(raw, s, type, name, vocab, seed, out) ? 0 : fail();
    if (s.n_expert != 0) return write_gpt_oss(raw, s, type, name, vocab, seed, out) ? 0 : fail();
    const std::string A = std::string(s.arch) + ".";
    auto key = [&](const char* k) { return A + k; };
    bool meta_ok = set_decoder_keys(raw, s, name);
    const uint32_t hd = s.head_dim != 0 ? s.head_dim : s.n_embd / s.n_head;
    if (meta_ok && s.n_rot != 0)
        meta_ok = basalt_gguf_writer_set_u32(raw, key("rope.dimension_count").c_str(), s.n_rot) == BASALT_OK;
    if (meta_ok && s.sliding_window != 0) {
        meta_ok =
            basalt_gguf_writer_set_u32(raw, key("attention.sliding_window").c_str(), s.sliding_window) == BASALT_OK;
    }
    if (meta_ok && s.rope_linear != 0.f) {
        meta_ok = basalt_gguf_writer_set_string(raw, key("rope.scaling.type").c_str(), "linear") == BASALT_OK &&
                  basalt_gguf_writer_set_f32(raw, key("rope.scaling.factor").c_str(), s.rope_linear) == BASALT_OK;
    }
    const uint32_t n_rot = s.n_rot != 0 ? s.n_rot : hd;
    if (meta_ok && s.longrope_ctx != 0) {
        // The converter's attention factor for longrope: sqrt(1 + ln(context / original) / ln(original)).
        const double scale = static_cast<double>(s.n_ctx) / s.longrope_ctx;
        const auto attn =
            static_cast<float>(std::sqrt(1 + std::log(scale) / std::log(static_cast<double>(s.longrope_ctx))));
        meta_ok = basalt_gguf_writer_set_u32(raw, key("rope.scaling.original_context_length").c_str(),
                                             s.longrope_ctx) == BASALT_OK &&
                  basalt_gguf_writer_set_f32(raw, key("rope.scaling.attn_factor").c_str(), attn) == BASALT_OK;
    }
    const bool hybrid = s.ssm_v_heads != 0;
    if (meta_ok && hybrid) {
        const int32_t sections[4] = {11, 11, 10, 0};  // Qwen3.5's mrope_section (text positions: plain neox rope)
        meta_ok =
            basalt_gguf_writer_set_u32(raw, key("ssm.conv_kernel").c_str(), s.ssm_conv) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("ssm.state_size").c_str(), s.ssm_head) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("ssm.group_count").c_str(), s.ssm_k_heads) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("ssm.time_step_rank").c_str(), s.ssm_v_heads) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("ssm.inner_size").c_str(), s.ssm_head * s.ssm_v_heads) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("full_attention_interval").c_str(), 4) == BASALT_OK &&
            basalt_gguf_writer_set_array_i32(raw, key("rope.dimension_sections").c_str(), sections, 4) == BASALT_OK;
    }
    const bool gemma4 = s.full_every != 0;
    auto full_layer = [&](uint32_t il) { return gemma4 && (il + 1) % s.full_every == 0; };
    if (meta_ok && gemma4) {
        // The converter's keys: head sizes and rotated dims per layer type, K/V heads and the pattern per layer.
        std::vector<int32_t> kv_heads, sliding, ff;
        for (uint32_t il = 0; il < s.n_layer; ++il) {
            kv_heads.push_back(static_cast<int32_t>(full_layer(il) ? s.n_head_kv_full : s.n_head_kv));
            sliding.push_back(full_layer(il) ? 0 : 1);
            ff.push_back(static_cast<int32_t>(s.double_wide && il >= s.n_layer - s.shared_kv ? 2 * s.n_ff : s.n_ff));
        }
        // K/V heads per layer only where the kinds differ (the converter writes one count when the config has no
        // num_global_key_value_heads, as E2B's); widths per layer with use_double_wide_mlp.
        if (s.n_head_kv_full != s.n_head_kv) {
            meta_ok = basalt_gguf_writer_set_array_i32(raw, key("attention.head_count_kv").c_str(), kv_heads.data(),
                                                       kv_heads.size()) == BASALT_OK;
        }
        if (meta_ok && s.double_wide) {
            meta_ok = basalt_gguf_writer_set_array_i32(raw, key("feed_forward_length").c_str(), ff.data(), ff.size()) ==
                      BASALT_OK;
        }
        meta_ok =
            meta_ok &&
            basalt_gguf_writer_set_u32(raw, key("attention.key_length").c_str(), s.head_dim_full) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("attention.value_length").c_str(), s.head_dim_full) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("attention.key_length_swa").c_str(), s.head_dim) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("attention.value_length_swa").c_str(), s.head_dim) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("rope.dimension_count").c_str(), s.head_dim_full) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("rope.dimension_count_swa").c_str(), s.head_dim) == BASALT_OK &&
            basalt_gguf_writer_set_f32(raw, key("rope.freq_base_swa").c_str(), 10000.f) == BASALT_OK &&
            basalt_gguf_writer_set_array_bool(raw, key("attention.sliding_window_pattern").c_str(), sliding.data(),
                                              sliding.size()) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("attention.shared_kv_layers").c_str(), s.shared_kv) == BASALT_OK &&
            basalt_gguf_writer_set_u32(raw, key("embedding_length_per_layer_input").c_str(), s.ple) == BASALT_OK &&
            basalt_gguf_writer_set_f32(raw, key("final_logit_softcapping").c_str(), 30.f) == BASALT_OK;
    }
    if (!meta_ok) return fail();
    if (!add_vocabulary(raw, vocab, s.n_vocab)) return 1;
    Rng rng{seed};
    const int64_t E = s.n_embd, q = int64_t{hd} * s.n_head, kv = int64_t{hd} * s.n_head_kv;
    const basalt_dtype t = type;
    // (hybrid shapes: 15 tensors per DeltaNet layer, 13 per attention layer, counted as 14)
    const uint64_t per_layer =
        s.ssm_v_heads != 0 ? 14 : (s.fused ? 6 : 9) + (s.qk_norm ? 2 : 0) + (s.post_norms ? 2 : 0) + (gemma4 ? 1 : 0);
    // (per-layer embeddings: 3 more tensors per layer and 3 for the model; a sharing layer has 3 fewer)
    const uint64_t n_tensors = 2 + (per_layer + (s.ple != 0 ? 3 : 0)) * uint64_t{s.n_layer} + (s.tied ? 0 : 1) +
                               (s.ple != 0 ? 3 : 0) - 3ull * s.shared_kv;
    basalt::tools::ProgressBar bar("making " + std::string(s.name), n_tensors, basalt::tools::ProgressBar::Unit::kCount,
                                   "tensors");
    uint64_t n_made = 0;
    auto put = [&](const std::string& tensor, std::vector<int64_t> ne, float std_dev, bool ones = false) {
        const bool ok = add(raw, rng, tensor, std::move(ne), t, std_dev, ones);
        bar.update(++n_made);
        return ok;
    };
    // Generated rope tensors first, as the converters write them (F32 vectors of n_rot / 2 factors).
    auto put_f32 = [&](const char* tensor, const std::vector<float>& v) {
        const int64_t ne = static_cast<int64_t>(v.size());
        return basalt_gguf_writer_add_tensor_f32(raw, tensor, BASALT_DTYPE_F32, &ne, 1, v.data(), v.size()) ==
               BASALT_OK;
    };
    // qwen35: a Gated DeltaNet mixer (recurrent) or gated attention. The conv taps stay F32 (llama-quantize keeps
    // ssm_conv1d); ssm_a = -exp(A_log) with A_log spread over [0, ln 16] as in the reference initialisation.
    auto put_hybrid_mixer = [&](const std::string& p, bool recurrent) {
        if (!recurrent) {
            return put(p + "attn_q.weight", {E, 2 * q}, 0.05f) && put(p + "attn_k.weight", {E, kv}, 0.05f) &&
                   put(p + "attn_v.weight", {E, kv}, 0.05f) && put(p + "attn_output.weight", {q, E}, 0.05f) &&
                   put(p + "attn_q_norm.weight", {hd}, 0, true) && put(p + "attn_k_norm.weight", {hd}, 0, true);
        }
        const int64_t nv = s.ssm_v_heads, inner = int64_t{s.ssm_head} * nv;
        const int64_t conv = 2 * int64_t{s.ssm_head} * s.ssm_k_heads + inner;
        std::vector<float> a_neg(static_cast<size_t>(nv));
        for (int64_t h = 0; h < nv; ++h)
            a_neg[static_cast<size_t>(h)] = -std::exp(std::log(16.f) * static_cast<float>(h) / static_cast<float>(nv));
        const bool ok =
            put(p + "attn_qkv.weight", {E, conv}, 0.05f) && put(p + "attn_gate.weight", {E, inner}, 0.05f) &&
            add(raw, rng, p + "ssm_conv1d.weight", {s.ssm_conv, conv}, BASALT_DTYPE_F32, 0.3f) &&
            add(raw, rng, p + "ssm_dt.bias", {nv}, BASALT_DTYPE_F32, 0.5f) && put_f32((p + "ssm_a").c_str(), a_neg) &&
            put(p + "ssm_beta.weight", {E, nv}, 0.05f) && put(p + "ssm_alpha.weight", {E, nv}, 0.05f) &&
            put(p + "ssm_norm.weight", {s.ssm_head}, 0, true) && put(p + "ssm_out.weight", {inner, E}, 0.05f);
        n_made += 3;
        bar.update(n_made);
        return ok;
    };
    if (s.llama3_rope && !put_f32("rope_freqs.weight", llama3_factors(n_rot, s.rope_base))) return fail();
    if (s.longrope_ctx != 0) {
        std::vector<float> longf(n_rot / 2), shortf(n_rot / 2, 1.f);
        for (size_t i = 0; i < longf.size(); ++i)
            longf[i] = 1.f + 31.f * static_cast<float>(i) / static_cast<float>(longf.size());
        if (!put_f32("rope_factors_long.weight", longf) || !put_f32("rope_factors_short.weight", shortf)) return fail();
    }
    if (gemma4) {
        // Proportional rope of the full layers: a quarter of the pairs rotate, the rest (factor 1e30) stay put.
        std::vector<float> factors(s.head_dim_full / 2, 1e30f);
        std::fill(factors.begin(), factors.begin() + s.head_dim_full / 8, 1.f);
        if (!put_f32("rope_freqs.weight", factors)) return fail();
    }
    if (!put("token_embd.weight", {E, s.n_vocab}, 1.0f)) return fail();
    const int64_t ple_all = int64_t{s.ple} * s.n_layer;
    if (s.ple != 0 && (!put("per_layer_token_embd.weight", {ple_all, s.n_vocab}, 0.05f) ||
                       !put("per_layer_model_proj.weight", {E, ple_all}, 0.05f) ||
                       !put("per_layer_proj_norm.weight", {s.ple}, 0, true))) {
        return fail();
    }
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const bool full = full_layer(il);
        const bool own_kv = il < s.n_layer - s.shared_kv;
        const int64_t lff = s.double_wide && !own_kv ? 2 * int64_t{s.n_ff} : s.n_ff;
        const int64_t lhd = full ? s.head_dim_full : hd, lq = lhd * s.n_head,
                      lkv = lhd * (full ? s.n_head_kv_full : s.n_head_kv);
        bool ok = put(p + "attn_norm.weight", {E}, 0, true);
        if (hybrid) {
            ok = ok && put_hybrid_mixer(p, (il + 1) % 4 != 0) && put(p + "post_attention_norm.weight", {E}, 0, true) &&
                 put(p + "ffn_gate.weight", {E, s.n_ff}, 0.05f) && put(p + "ffn_up.weight", {E, s.n_ff}, 0.05f) &&
                 put(p + "ffn_down.weight", {s.n_ff, E}, 0.05f);
            if (!ok) return fail();
            continue;
        }
        if (s.fused) {
            ok = ok && put(p + "attn_qkv.weight", {E, q + 2 * kv}, 0.05f);
        } else {
            ok = ok && put(p + "attn_q.weight", {E, lq}, 0.05f) &&
                 (!own_kv || (put(p + "attn_k.weight", {E, lkv}, 0.05f) &&
                              ((full && !s.full_attn_v) || put(p + "attn_v.weight", {E, lkv}, 0.05f))));
        }
        if (s.qk_norm) {
            ok = ok && put(p + "attn_q_norm.weight", {lhd}, 0, true) &&
                 (!own_kv || put(p + "attn_k_norm.weight", {lhd}, 0, true));
        }
        ok = ok && put(p + "attn_output.weight", {lq, E}, 0.05f);
        if (s.post_norms) ok = ok && put(p + "post_attention_norm.weight", {E}, 0, true);
        ok = ok && put(p + "ffn_norm.weight", {E}, 0, true);
        if (s.fused) {
            ok = ok && put(p + "ffn_up.weight", {E, 2 * int64_t{s.n_ff}}, 0.05f);
        } else {
            ok = ok && put(p + "ffn_gate.weight", {E, lff}, 0.05f) && put(p + "ffn_up.weight", {E, lff}, 0.05f);
        }
        ok = ok && put(p + "ffn_down.weight", {lff, E}, 0.05f);
        if (s.post_norms) ok = ok && put(p + "post_ffw_norm.weight", {E}, 0, true);
        if (s.ple != 0) {
            ok = ok && put(p + "inp_gate.weight", {E, s.ple}, 0.05f) && put(p + "proj.weight", {s.ple, E}, 0.05f) &&
                 put(p + "post_norm.weight", {E}, 0, true);
        }
        if (gemma4)
            ok = ok && put_f32((p + "layer_output_scale.weight").c_str(), {0.5f + 0.5f * std::abs(rng.normal())});
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
