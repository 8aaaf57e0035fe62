// The architectures Basalt knows, declared once (arch-table.cpp): for each, the name its GGUF files carry in
// general.architecture, the graph builder, the hyper-parameters it reads and their defaults, and what the memory plan
// and the session take from it. Nothing outside core/src/graph/ compares an architecture's name (the CTest
// "source: no architecture-name comparison outside core/src/graph" greps for it): read_hparams copies a row's facts
// into ModelHparams (learned_positions, ffn_mats, encoder_decoder, ...) and the rest of the tree reads those.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace basalt {

struct ForwardContext;
struct ModelHparams;

// What a file of the architecture holds and which keys beyond the common ones (<arch>.block_count, ...) it reads.
enum class ArchKind {
    DECODER,          // a decoder-only language model
    ENCODER_DECODER,  // an encoder pass, then decoder steps with cross-attention (t5); also reads
                      // <arch>.decoder_block_count, attention.relative_buckets_count, decoder_start_token_id
    CONTROL_VECTOR,   // a llama.cpp control vector: steering directions, no model; reads <arch>.layer_count only
    ENCODER,          // an encoder-only embedding model (bert): one bidirectional pass over each whole input, hidden
                      // states out (pooled per <arch>.pooling_type), no KV cache and no logits
};

// Which expert counts a row's builder takes (one architecture may have a row per variant).
enum class ArchExperts {
    ANY,       // the builder ignores <arch>.expert_count
    NONE,      // dense models only (expert_count 0)
    REQUIRED,  // mixture-of-experts models only (expert_count > 0)
};

// One row: an architecture, or one variant of it (the rows of one name agree on everything but label, experts
// and build; arch-table.cpp checks that at compile time).
struct ArchSpec {
    const char* name;   // general.architecture
    const char* label;  // how the unsupported-architecture error lists this row
    ArchKind kind = ArchKind::DECODER;
    ArchExperts experts = ArchExperts::ANY;
    void (*build)(ForwardContext&) = nullptr;  // the graph builder; nullptr: the file loads but never runs
    bool rope = true;                          // rotary positions: reads <arch>.rope.dimension_count (n_rot)
    double rope_freq_base = 1e4;               // default of <arch>.rope.freq_base
    uint32_t sliding_pattern = 1;              // with a sliding window: every Nth layer global (1: every layer slides)
    bool learned_positions = false;            // position embeddings end at context_length: no position past it
    uint32_t ffn_mats = 3;                     // FFN weight matrices per expert (the memory plan's scratch estimate)
    uint32_t rel_buckets = 0;                  // default of attention.relative_buckets_count (encoder-decoder)
    uint32_t sliding_window = 0;               // default of attention.sliding_window (0: none)
    float attn_soft_cap = 0.f;   // default of attn_logit_softcapping; 0: not read (the builder applies no soft-cap)
    float final_soft_cap = 0.f;  // default of final_logit_softcapping; 0: not read (the builder applies no soft-cap)
    // RoPE scaling (model/rope-scaling.hpp): which frequency-factor tensors the builder applies (others are refused),
    // whether sliding-window layers rotate unscaled with rope.freq_base_swa, whether it applies the soft-cap keys.
    bool rope_freqs = false;             // rope_freqs.weight (Llama 3 factors)
    bool rope_longrope = false;          // rope_factors_long/short.weight
    bool rope_swa_base = false;          // sliding-window layers: base rope.freq_base_swa (default 1e4), no scaling
    bool soft_caps = false;              // attn_logit_softcapping / final_logit_softcapping (refused when false)
    bool ignore_sliding_window = false;  // attention.sliding_window read as 0 (full attention, as llama.cpp runs it)
    // Reads rope.scaling.yarn_beta_fast/slow and yarn_log_multiplier (elsewhere refused unless llama.cpp's
    // defaults) and attention.temperature_scale (mistral3).
    bool rope_yarn_keys = false;
    // Hybrid recurrent models (qwen35): reads <arch>.ssm.* and full_attention_interval; every layer but each
    // interval-th is a recurrent (Gated DeltaNet) layer with per-sequence state (docs/kv-cache.md).
    bool recurrent = false;
    uint32_t full_attention_interval = 0;  // default of <arch>.full_attention_interval
    // A shared expert beside the routed ones (qwen35moe): reads expert_shared_feed_forward_length (default
    // feed_forward_length) into n_ff_shexp, which the memory plan counts.
    bool shared_expert = false;
    // Gemma 4: head counts per layer (attention.head_count / head_count_kv may be arrays), sliding-window layers with
    // their own head size and rotated dims (attention.key_length_swa / value_length_swa, rope.dimension_count_swa);
    // also reads its small layouts' keys: feed_forward_length per layer, embedding_length_per_layer_input (per-layer
    // embeddings) and attention.shared_kv_layers (KV shared between layers).
    bool per_layer_attention = false;
    // Reads <arch>.rope.scaling.finetuned as llama.cpp's granite loaders do: a switch for rope on every layer
    // (default true; false: no layer rotates). Elsewhere the key is informational in llama.cpp and not read.
    bool rope_finetuned_switch = false;
    // A decoder whose builder also runs embedding passes (attention_block's encoder path, embedding_out): a file
    // with <arch>.pooling_type mean, cls or last is then a decoder embedder (docs/embeddings.md).
    bool embed_pass = false;
};

// Every row, in the order the unsupported-architecture error lists them. Static storage; thread-safe.
std::span<const ArchSpec> arch_table();
// The facts of architecture `name` (its first row), or the defaults of an unknown one (label and build empty:
// such a file loads for its metadata and vocabulary but never runs). Static storage; thread-safe.
const ArchSpec& arch_spec(std::string_view name);
// Whether some row of architecture `name` has a graph builder. Thread-safe.
bool arch_runnable(std::string_view name);
// The row whose builder runs the model (its architecture and expert count); throws Error(UNSUPPORTED) naming the
// architecture and listing the supported rows when there is none. Thread-safe.
const ArchSpec& arch_builder(const ModelHparams& hp);

}  // namespace basalt
