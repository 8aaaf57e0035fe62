// Architecture hyper-parameters read from a GGUF file's metadata (`<arch>.block_count`, ...), validated
// before anything is built from them; which keys an architecture reads and their defaults come from the
// architecture table (graph/arch-table.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gguf.hpp"

namespace basalt {

struct ModelHparams {
    std::string arch;  // general.architecture: llama, qwen2, gemma3, gpt2, t5, ...
    std::string name;  // general.name, may be empty
    uint32_t n_layer = 0;
    uint32_t n_layer_dec = 0;  // encoder-decoder (t5): decoder blocks; 0 otherwise
    uint32_t n_embd = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim_k = 0;  // key_length, default n_embd / n_head
    uint32_t head_dim_v = 0;  // value_length, default n_embd / n_head
    uint32_t n_ff = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_vocab = 0;
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_rot = 0;  // rope dimensions (0 for models without rope)
    float rope_freq_base = 10000.f;
    float rope_freq_scale = 1.f;
    float norm_eps = 1e-5f;
    uint32_t sliding_window = 0;      // 0: none
    std::vector<bool> layer_sliding;  // n_layer entries: layer uses the sliding window
    bool encoder_decoder = false;
    uint32_t n_rel_buckets = 0;        // t5: relative position buckets (attention.relative_buckets_count)
    uint32_t rel_max_distance = 128;   // t5: distance at which the buckets saturate (fixed in T5)
    int32_t decoder_start_token = -1;  // t5: first decoder token (decoder_start_token_id, default pad 0)
    bool known_arch = false;           // one of the families Basalt builds graphs for
    // From the architecture table (core/src/graph/arch-table.hpp), so that nothing else asks for the name:
    bool learned_positions = false;  // position embeddings (gpt2): no position at or past n_ctx_train (when set)
    uint32_t ffn_mats = 3;           // FFN weight matrices per expert: 3 gated (gate, up, down), 2 plain (up, down)
    // Granite's multipliers (0: absent): embeddings times embedding_scale, each residual branch times residual_scale,
    // attention scores times attention_scale instead of 1/sqrt(head_dim), logits divided by logit_scale.
    float embedding_scale = 0.f;  // <arch>.embedding_scale
    float residual_scale = 0.f;   // <arch>.residual_scale
    float attention_scale = 0.f;  // <arch>.attention.scale
    float logit_scale = 0.f;      // <arch>.logit_scale

    // Keys and value heads summed over one token's K/V row: n_head_kv * head_dim.
    uint32_t n_embd_k_gqa() const noexcept { return n_head_kv * head_dim_k; }
    uint32_t n_embd_v_gqa() const noexcept { return n_head_kv * head_dim_v; }
};

// Reads and validates the hyper-parameters; throws Error(FORMAT) naming the missing/invalid key.
ModelHparams read_hparams(const gguf::File& file);

}  // namespace basalt
