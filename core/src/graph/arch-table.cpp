#include "graph/arch-table.hpp"

#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

// Adding an architecture: its builder (arch-<name>.cpp, declared in arch.hpp) and one row here. Rows of one name are
// variants told apart by their expert count; the order is the one the unsupported-architecture error lists.
constexpr ArchSpec kArchs[] = {
    {.name = "llama",
     .label = "llama",
     .experts = ArchExperts::NONE,
     .build = build_llama,
     .rope_freqs = true,
     .rope_longrope = true},
    {.name = "qwen2", .label = "qwen2", .build = build_qwen2},
    // Gemma 3 interleaves 5 sliding-window layers with 1 global layer.
    {.name = "gemma3",
     .label = "gemma3",
     .build = build_gemma3,
     .rope_freq_base = 1e6,
     .sliding_pattern = 6,
     .rope_swa_base = true},
    // Learned absolute positions and a plain (ungated) MLP.
    {.name = "gpt2", .label = "gpt2", .build = build_gpt2, .rope = false, .learned_positions = true, .ffn_mats = 2},
    {.name = "llama",
     .label = "llama with experts",
     .experts = ArchExperts::REQUIRED,
     .build = build_moe,
     .rope_freqs = true,
     .rope_longrope = true},
    // Qwen3-Embedding: a qwen3 file with pooling_type last is a decoder embedder (.embed_pass).
    {.name = "qwen3", .label = "qwen3", .build = build_qwen3, .embed_pass = true},
    {.name = "qwen3moe", .label = "qwen3moe", .experts = ArchExperts::REQUIRED, .build = build_qwen3moe},
    // Gemma 2 alternates sliding-window (even) and global (odd) layers and soft-caps attention and final logits;
    // the defaults are llama.cpp's for files without the keys.
    {.name = "gemma2",
     .label = "gemma2",
     .build = build_gemma2,
     .sliding_pattern = 2,
     .sliding_window = 4096,
     .attn_soft_cap = 50.f,
     .final_soft_cap = 30.f,
     .soft_caps = true},
    // No rope on every 4th layer (arch-smollm3.cpp).
    {.name = "smollm3", .label = "smollm3", .build = build_smollm3},
    // Hybrid: Gated DeltaNet layers with a per-sequence recurrent state, every 4th layer gated full attention with
    // partial neox rope (arch-qwen35.cpp).
    {.name = "qwen35",
     .label = "qwen35",
     .experts = ArchExperts::NONE,
     .build = build_qwen35,
     .rope_freq_base = 1e7,
     .recurrent = true,
     .full_attention_interval = 4},
    // Relative position buckets instead of rope.
    {.name = "t5",
     .label = "t5",
     .kind = ArchKind::ENCODER_DECODER,
     .build = build_t5,
     .rope = false,
     .rel_buckets = 32},
    // Embeddings (docs/embeddings.md): post-LayerNorm encoder with learned positions and token types.
    {.name = "bert",
     .label = "bert",
     .kind = ArchKind::ENCODER,
     .build = build_bert,
     .rope = false,
     .learned_positions = true,
     .ffn_mats = 2},
    // Fused qkv and gate|up, neox rope (partial on Phi-4-mini), longrope factors; llama.cpp runs Phi's sliding
    // window as full attention, and so does Basalt.
    {.name = "phi3", .label = "phi3", .build = build_phi3, .rope_longrope = true, .ignore_sliding_window = true},
    // Ministral 3: llama's block with YaRN (its beta and log-multiplier keys read) and llama 4's attention temperature
    // (queries times 1 + s ln(floor(pos / n_ctx_orig) + 1) after rope: inputs/attention-temperature.cpp).
    {.name = "mistral3",
     .label = "mistral3",
     .experts = ArchExperts::NONE,
     .build = build_llama,
     .rope_freqs = true,
     .rope_longrope = true,
     .rope_yarn_keys = true},
    {.name = "mistral3",
     .label = "mistral3 with experts",
     .experts = ArchExperts::REQUIRED,
     .build = build_moe,
     .rope_freqs = true,
     .rope_longrope = true,
     .rope_yarn_keys = true},
    // Llama's block with embedding, residual, attention and logit multipliers (arch-granite.cpp).
    {.name = "granite",
     .label = "granite",
     .experts = ArchExperts::NONE,
     .build = build_granite,
     .rope_finetuned_switch = true},
    // Post-norms only and q/k norms over the whole projection; rope on halves; OLMo 2's base 5e5.
    {.name = "olmo2", .label = "olmo2", .experts = ArchExperts::NONE, .build = build_olmo2, .rope_freq_base = 5e5},
    // gpt-oss: biased attention with learned sink logits, sliding window on even layers, neox rope with YaRN,
    // biased experts on every layer with a clamped SwiGLU (arch-gpt-oss.cpp).
    {.name = "gpt-oss",
     .label = "gpt-oss",
     .experts = ArchExperts::REQUIRED,
     .build = build_gpt_oss,
     .sliding_pattern = 2},
    // Not a model: loads for its metadata and directions (the steering-vector plugin reads it).
    {.name = "controlvector", .label = nullptr, .kind = ArchKind::CONTROL_VECTOR},
    // qwen35's hybrid blocks with routed experts and a sigmoid-gated shared expert (arch-qwen35.cpp).
    {.name = "qwen35moe",
     .label = "qwen35moe",
     .experts = ArchExperts::REQUIRED,
     .build = build_qwen35,
     .rope_freq_base = 1e7,
     .recurrent = true,
     .full_attention_interval = 4,
     .shared_expert = true},
    // Gemma 4 (dense): per-layer head sizes and counts, q/k norms and a weightless V norm, attention scale 1, full
    // layers with proportional rope (rope_freqs.weight), sliding-window layers with their own base; E2B/E4B's
    // per-layer embeddings and KV shared between layers (arch-gemma4.cpp).
    {.name = "gemma4",
     .label = "gemma4",
     .experts = ArchExperts::NONE,
     .build = build_gemma4,
     .rope_freq_base = 1e6,
     .sliding_pattern = 6,
     .final_soft_cap = 30.f,
     .rope_freqs = true,
     .rope_swa_base = true,
     .soft_caps = true,
     .per_layer_attention = true},
    // nomic-embed-text: bert's post-LN encoder with rotary positions (neox, no position table), fused qkv and a
    // SwiGLU FFN (arch-bert.cpp).
    {.name = "nomic-bert", .label = "nomic-bert", .kind = ArchKind::ENCODER, .build = build_nomic_bert},
    // EmbeddingGemma: gemma3's block, bidirectional, sliding-window layers with a symmetric window (n_swa / 2 each
    // side), mean pooling and the sentence-transformers dense layers when the file has them (arch-gemma3.cpp).
    {.name = "gemma-embedding",
     .label = "gemma-embedding",
     .kind = ArchKind::ENCODER,
     .build = build_gemma_embedding,
     .rope_freq_base = 1e6,
     .sliding_pattern = 6,
     .rope_swa_base = true},
};

// The facts of an architecture the table does not have.
constexpr ArchSpec kUnknown{.name = "", .label = nullptr};

constexpr bool same_facts(const ArchSpec& a, const ArchSpec& b) {
    return a.kind == b.kind && a.rope == b.rope && a.rope_freq_base == b.rope_freq_base &&
           a.sliding_pattern == b.sliding_pattern && a.learned_positions == b.learned_positions &&
           a.ffn_mats == b.ffn_mats && a.rel_buckets == b.rel_buckets && a.sliding_window == b.sliding_window &&
           a.attn_soft_cap == b.attn_soft_cap && a.final_soft_cap == b.final_soft_cap && a.rope_freqs == b.rope_freqs &&
           a.rope_longrope == b.rope_longrope && a.rope_swa_base == b.rope_swa_base && a.soft_caps == b.soft_caps &&
           a.ignore_sliding_window == b.ignore_sliding_window && a.rope_yarn_keys == b.rope_yarn_keys &&
           a.recurrent == b.recurrent && a.full_attention_interval == b.full_attention_interval &&
           a.shared_expert == b.shared_expert && a.per_layer_attention == b.per_layer_attention &&
           a.rope_finetuned_switch == b.rope_finetuned_switch && a.embed_pass == b.embed_pass;
}

// read_hparams takes an architecture's facts from its first row: every other row of the name must agree.
constexpr bool variants_agree() {
    for (const ArchSpec& a : kArchs) {
        for (const ArchSpec& b : kArchs) {
            if (std::string_view(a.name) == std::string_view(b.name) && !same_facts(a, b)) return false;
        }
    }
    return true;
}
static_assert(variants_agree(), "rows of one architecture differ in more than label, experts and build");

bool takes(const ArchSpec& row, uint32_t n_expert) {
    switch (row.experts) {
        case ArchExperts::ANY:
            return true;
        case ArchExperts::NONE:
            return n_expert == 0;
        case ArchExperts::REQUIRED:
            return n_expert > 0;
    }
    return false;
}

}  // namespace

std::span<const ArchSpec> arch_table() {
    return kArchs;
}

const ArchSpec& arch_spec(std::string_view name) {
    for (const ArchSpec& row : kArchs) {
        if (name == row.name) return row;
    }
    return kUnknown;
}

bool arch_runnable(std::string_view name) {
    for (const ArchSpec& row : kArchs) {
        if (name == row.name && row.build != nullptr) return true;
    }
    return false;
}

const ArchSpec& arch_builder(const ModelHparams& hp) {
    std::string supported;
    for (const ArchSpec& row : kArchs) {
        if (row.build == nullptr) continue;
        if (hp.arch == row.name && takes(row, hp.n_expert)) return row;
        supported += (supported.empty() ? "" : ", ") + std::string(row.label);
    }
    fail(BASALT_ERR_UNSUPPORTED, "architecture '{}' is not supported (supported: {})", hp.arch, supported);
}

}  // namespace basalt
