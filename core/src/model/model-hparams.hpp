// Architecture hyper-parameters read from a GGUF file's metadata (`<arch>.block_count`, ...), validated
// before anything is built from them; which keys an architecture reads and their defaults come from the
// architecture table (graph/arch-table.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gguf.hpp"
#include "model/rope-scaling.hpp"

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
    uint32_t n_ff = 0;        // FFN width; per expert in MoE models (expert_feed_forward_length when the file has it)
    uint32_t n_ctx_train = 0;
    uint32_t n_vocab = 0;
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_ff_shexp =
        0;               // shared expert's FFN width (arch table `shared_expert`: expert_shared_feed_forward_length,
                         // default the dense feed_forward_length); 0: no shared expert
    uint32_t n_rot = 0;  // rope dimensions (0 for models without rope)
    float rope_freq_base = 10000.f;
    float rope_freq_scale = 1.f;
    float norm_eps = 1e-5f;
    uint32_t sliding_window = 0;      // 0: none
    std::vector<bool> layer_sliding;  // n_layer entries: layer uses the sliding window
    float attn_soft_cap = 0.f;        // attention-logit soft-cap (gemma2): score = cap * tanh(score / cap); 0: none
    float final_soft_cap = 0.f;       // final-logit soft-cap (gemma2): logit = cap * tanh(logit / cap); 0: none
    bool encoder_decoder = false;
    uint32_t n_rel_buckets = 0;        // t5: relative position buckets (attention.relative_buckets_count)
    uint32_t rel_max_distance = 128;   // t5: distance at which the buckets saturate (fixed in T5)
    int32_t decoder_start_token = -1;  // t5: first decoder token (decoder_start_token_id, default pad 0)
    bool known_arch = false;           // one of the families Basalt builds graphs for
    // From the architecture table (core/src/graph/arch-table.hpp), so that nothing else asks for the name:
    bool learned_positions = false;  // position embeddings (gpt2): no position at or past n_ctx_train (when set)
    uint32_t ffn_mats = 3;           // FFN weight matrices per expert: 3 gated (gate, up, down), 2 plain (up, down)
    // Embeddings (docs/embeddings.md):
    bool encoder_only = false;     // an embedding model (bert, or a decoder embedder): one pass per input, no KV cache,
                                   // no logits
    bool embed_causal = false;     // its passes attend causally (decoder embedders such as Qwen3-Embedding)
    int32_t pooling = -1;          // <arch>.pooling_type: 0 none, 1 mean, 2 cls, 3 last, 4 rank; -1 not in the file
    uint32_t n_cls_out = 0;        // outputs of the rank (classifier) head: rows of cls.output.weight; 0: no head
    RopeScaling rope_scaling;      // rope.scaling.*, frequency factors (rope_freq_scale is its freq_scale)
    std::string rope_description;  // what sessions apply, in words (basalt inspect)
    // Math the file asks for that no builder implements (naming the key), or empty; check_runnable refuses it.
    std::string unimplemented;
    // Hybrid recurrent models (qwen35; arch table `recurrent`): the Gated DeltaNet layers' shape (<arch>.ssm.*) and
    // which layers are recurrent (all but every full_attention_interval-th); empty layer_recurrent: none.
    uint32_t ssm_conv_kernel = 0;  // ssm.conv_kernel: taps of the short causal convolution
    uint32_t ssm_d_state = 0;      // ssm.state_size: key head size dk
    uint32_t ssm_n_group = 0;      // ssm.group_count: key heads nk
    uint32_t ssm_dt_rank = 0;      // ssm.time_step_rank: value heads nv
    uint32_t ssm_d_inner = 0;      // ssm.inner_size: nv * dv
    std::vector<bool> layer_recurrent;

    // Whether the model has recurrent layers (and so per-sequence state beside its KV cache).
    bool recurrent() const noexcept { return !layer_recurrent.empty(); }
    // Channels of the convolution: q, k (nk * dk each) and v (d_inner).
    uint32_t ssm_conv_channels() const noexcept { return 2 * ssm_n_group * ssm_d_state + ssm_d_inner; }
    // Floats of one sequence's state in one recurrent layer: the conv's last K-1 inputs, the delta rule's matrices.
    uint64_t conv_state_floats() const noexcept {
        return static_cast<uint64_t>(ssm_conv_kernel - 1) * ssm_conv_channels();
    }
    uint64_t delta_state_floats() const noexcept { return static_cast<uint64_t>(ssm_d_state) * ssm_d_inner; }
    // Bytes of one sequence's whole recurrent state: every recurrent layer's conv and delta-rule floats (0: none).
    uint64_t recurrent_state_bytes() const noexcept {
        uint64_t layers = 0;
        for (bool r : layer_recurrent) layers += r ? 1 : 0;
        return layers * 4 * (conv_state_floats() + delta_state_floats());
    }
    // Granite's multipliers (0: absent): embeddings times embedding_scale, each residual branch times residual_scale,
    // attention scores times attention_scale instead of 1/sqrt(head_dim), logits divided by logit_scale.
    float embedding_scale = 0.f;  // <arch>.embedding_scale
    float residual_scale = 0.f;   // <arch>.residual_scale
    float attention_scale = 0.f;  // <arch>.attention.scale
    float logit_scale = 0.f;      // <arch>.logit_scale
    // granite: <arch>.rope.scaling.finetuned, llama.cpp's switch for rope on every layer (false: no layer rotates).
    bool rope_on = true;

    // Per-layer attention shapes (gemma4; arch table `per_layer_attention`): head counts from head_count /
    // head_count_kv arrays (empty: n_head / n_head_kv on every layer, which then hold the largest count), and the
    // sliding-window layers' own head sizes and rotated dims (key_length_swa, value_length_swa,
    // rope.dimension_count_swa; 0: as the other layers).
    std::vector<uint32_t> layer_n_head;
    std::vector<uint32_t> layer_n_head_kv;
    uint32_t head_dim_k_swa = 0;
    uint32_t head_dim_v_swa = 0;
    uint32_t n_rot_swa = 0;
    // Gemma 4's blk.N.layer_output_scale.weight: one number per layer multiplying the layer's output, read from the
    // file at load (the op set has no scalar broadcast, so the graph applies it as SCALE); empty: none.
    std::vector<float> layer_out_scale;
    // FFN width per layer (gemma4's feed_forward_length array: E2B's KV-sharing layers are twice as wide); empty: n_ff
    // on every layer, which otherwise holds the widest.
    std::vector<uint32_t> layer_n_ff;
    // Per-layer embeddings (gemma4 E2B/E4B: embedding_length_per_layer_input): the width of each layer's own input
    // (per_layer_token_embd rows of n_layer x this); 0: none.
    uint32_t n_embd_per_layer = 0;
    // KV shared between layers (gemma4: attention.shared_kv_layers): per layer the layer whose K/V it attends over,
    // itself for a layer that computes and caches its own; a sharing layer (one of the last shared_kv_layers) reads
    // the last earlier caching layer of its kind (sliding-window or full). Empty: every layer caches its own.
    std::vector<uint32_t> layer_kv_source;

    // Layer il's query heads, K/V heads, head sizes and rotated dims.
    uint32_t n_head_at(uint32_t il) const noexcept { return il < layer_n_head.size() ? layer_n_head[il] : n_head; }
    uint32_t n_head_kv_at(uint32_t il) const noexcept {
        return il < layer_n_head_kv.size() ? layer_n_head_kv[il] : n_head_kv;
    }
    bool swa_shape(uint32_t il) const noexcept { return il < layer_sliding.size() && layer_sliding[il]; }
    uint32_t head_dim_k_at(uint32_t il) const noexcept {
        return swa_shape(il) && head_dim_k_swa != 0 ? head_dim_k_swa : head_dim_k;
    }
    uint32_t head_dim_v_at(uint32_t il) const noexcept {
        return swa_shape(il) && head_dim_v_swa != 0 ? head_dim_v_swa : head_dim_v;
    }
    uint32_t n_rot_at(uint32_t il) const noexcept { return swa_shape(il) && n_rot_swa != 0 ? n_rot_swa : n_rot; }
    // Layer il's FFN width.
    uint32_t n_ff_at(uint32_t il) const noexcept { return il < layer_n_ff.size() ? layer_n_ff[il] : n_ff; }
    // The layer whose K/V cache layer il attends over (il itself unless it shares), and whether il has its own.
    uint32_t kv_source(uint32_t il) const noexcept { return il < layer_kv_source.size() ? layer_kv_source[il] : il; }
    bool owns_kv(uint32_t il) const noexcept { return kv_source(il) == il; }

    // Keys and value heads summed over one token's K/V row: n_head_kv * head_dim (the model-wide shape; the
    // per-layer forms below are what the caches of a model with per-layer shapes hold).
    uint32_t n_embd_k_gqa() const noexcept { return n_head_kv * head_dim_k; }
    uint32_t n_embd_v_gqa() const noexcept { return n_head_kv * head_dim_v; }
    uint32_t n_embd_k_gqa(uint32_t il) const noexcept { return n_head_kv_at(il) * head_dim_k_at(il); }
    uint32_t n_embd_v_gqa(uint32_t il) const noexcept { return n_head_kv_at(il) * head_dim_v_at(il); }
};

// Reads and validates the hyper-parameters; throws Error(FORMAT) naming the missing/invalid key.
ModelHparams read_hparams(const gguf::File& file);

}  // namespace basalt
