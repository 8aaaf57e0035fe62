#include "model/model-hparams.hpp"

#include <algorithm>
#include <cmath>

#include "graph/arch-table.hpp"
#include "model/dequantize.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

uint32_t require_u32(const gguf::File& f, const std::string& key) {
    const auto v = f.get_int(key);
    if (!v) fail(BASALT_ERR_FORMAT, "{}: required metadata '{}' is missing", f.source(), key);
    if (*v <= 0 || *v > UINT32_MAX)
        fail(BASALT_ERR_FORMAT, "{}: metadata '{}' = {} is out of range", f.source(), key, *v);
    return static_cast<uint32_t>(*v);
}

uint32_t optional_u32(const gguf::File& f, const std::string& key, uint32_t fallback) {
    const auto v = f.get_int(key);
    if (!v) return fallback;
    if (*v < 0 || *v > UINT32_MAX)
        fail(BASALT_ERR_FORMAT, "{}: metadata '{}' = {} is out of range", f.source(), key, *v);
    return static_cast<uint32_t>(*v);
}

// A key that llama.cpp reads with get_key_or_arr: one number, or one per layer. Returns the per-layer values (all
// equal for a single number); empty when the key is absent.
std::vector<uint32_t> per_layer_u32(const gguf::File& f, const std::string& key, uint32_t n_layer) {
    const gguf::Value* v = f.find(key);
    if (v == nullptr) return {};
    if (v->type != gguf::ValueType::ARRAY) return std::vector<uint32_t>(n_layer, optional_u32(f, key, 0));
    if (v->array_size() != n_layer) {
        fail(BASALT_ERR_FORMAT, "{}: metadata '{}' has {} entries for {} layers", f.source(), key, v->array_size(),
             n_layer);
    }
    std::vector<uint32_t> out(n_layer);
    for (uint32_t il = 0; il < n_layer; ++il) {
        const auto e = v->element(il).as_int();
        if (!e || *e < 0 || *e > UINT32_MAX)
            fail(BASALT_ERR_FORMAT, "{}: metadata '{}' entry {} is not a count", f.source(), key, il);
        out[il] = static_cast<uint32_t>(*e);
    }
    return out;
}

// Gemma 4's per-layer attention shapes, FFN widths and per-layer embedding width (arch table `per_layer_attention`).
void read_per_layer_attention(const gguf::File& f, const std::string& A, ModelHparams& h) {
    auto heads = [&](const std::string& key, uint32_t fallback, std::vector<uint32_t>& layers) {
        layers = per_layer_u32(f, key, h.n_layer);
        if (layers.empty()) layers.assign(h.n_layer, fallback);
        uint32_t most = 0;
        for (uint32_t n : layers) most = std::max(most, n);
        return most;
    };
    h.n_head = heads(A + "attention.head_count", 0, h.layer_n_head);
    h.n_head_kv = heads(A + "attention.head_count_kv", 0, h.layer_n_head_kv);
    for (uint32_t il = 0; il < h.n_layer; ++il) {
        if (h.layer_n_head_kv[il] == 0) h.layer_n_head_kv[il] = h.layer_n_head[il];
        if (h.layer_n_head[il] == 0 || h.layer_n_head[il] % h.layer_n_head_kv[il] != 0) {
            fail(BASALT_ERR_FORMAT,
                 "{}: layer {}: attention.head_count {} is not a positive multiple of head_count_kv {}", f.source(), il,
                 h.layer_n_head[il], h.layer_n_head_kv[il]);
        }
    }
    h.n_head_kv = *std::max_element(h.layer_n_head_kv.begin(), h.layer_n_head_kv.end());
    h.head_dim_k_swa = optional_u32(f, A + "attention.key_length_swa", 0);
    h.head_dim_v_swa = optional_u32(f, A + "attention.value_length_swa", h.head_dim_k_swa);
    h.n_rot_swa = optional_u32(f, A + "rope.dimension_count_swa", h.head_dim_k_swa);
    // One width, or one per layer (use_double_wide_mlp: the KV-sharing layers' are twice the others'); n_ff the widest.
    h.layer_n_ff = per_layer_u32(f, A + "feed_forward_length", h.n_layer);
    if (!h.layer_n_ff.empty()) h.n_ff = *std::max_element(h.layer_n_ff.begin(), h.layer_n_ff.end());
    for (uint32_t il = 0; il < h.n_layer; ++il) {
        const std::string name = "blk." + std::to_string(il) + ".layer_output_scale.weight";
        const gguf::TensorInfo* t = f.tensor(name);
        if (t == nullptr) continue;
        if (t->n_elements() != 1 || (t->type != BASALT_DTYPE_F32 && t->type != BASALT_DTYPE_F16)) {
            fail(BASALT_ERR_FORMAT, "{}: tensor '{}' must hold one F32 or F16 number", f.source(), name);
        }
        if (h.layer_out_scale.empty()) h.layer_out_scale.assign(h.n_layer, 1.0f);
        dequantize_row(t->type, f.tensor_data(*t), &h.layer_out_scale[il], 1);
    }
    h.n_embd_per_layer = optional_u32(f, A + "embedding_length_per_layer_input", 0);
}

// Gemma 4's KV sharing (attention.shared_kv_layers = N): the last N layers compute no K/V and attend over the cache
// of the last layer before them of the same kind (sliding-window or full), as transformers' Gemma 4 picks it
// (llama.cpp's loader takes the last two layers before them, which is the same layer when the last is full and the
// one before it slides, as in every published file). Needs layer_sliding.
void read_shared_kv(const gguf::File& f, const std::string& A, ModelHparams& h) {
    const uint32_t shared = optional_u32(f, A + "attention.shared_kv_layers", 0);
    if (shared == 0) return;
    if (shared >= h.n_layer) {
        fail(BASALT_ERR_FORMAT, "{}: {}attention.shared_kv_layers = {} leaves no layer of the {} to compute K/V",
             f.source(), A, shared, h.n_layer);
    }
    const uint32_t first = h.n_layer - shared;
    h.layer_kv_source.resize(h.n_layer);
    for (uint32_t il = 0; il < h.n_layer; ++il) {
        h.layer_kv_source[il] = il;
        if (il < first) continue;
        uint32_t src = first;
        for (uint32_t j = first; j-- > 0;) {
            if (h.layer_sliding[j] == h.layer_sliding[il]) {
                src = j;
                break;
            }
        }
        const char* kind = h.layer_sliding[il] ? "sliding-window" : "full-attention";
        if (src == first) {
            fail(BASALT_ERR_FORMAT,
                 "{}: layer {} shares K/V ({}attention.shared_kv_layers = {}) but no {} layer before "
                 "layer {} computes them",
                 f.source(), il, A, shared, kind, first);
        }
        if (h.n_head_kv_at(src) != h.n_head_kv_at(il) || h.head_dim_k_at(src) != h.head_dim_k_at(il) ||
            h.head_dim_v_at(src) != h.head_dim_v_at(il)) {
            fail(BASALT_ERR_FORMAT,
                 "{}: layer {} shares the K/V of layer {}, whose K/V heads ({} of {}) differ from its "
                 "own ({} of {})",
                 f.source(), il, src, h.n_head_kv_at(src), h.head_dim_k_at(src), h.n_head_kv_at(il),
                 h.head_dim_k_at(il));
        }
        h.layer_kv_source[il] = src;
    }
}

}  // namespace

ModelHparams read_hparams(const gguf::File& f) {
    ModelHparams h;
    const auto arch = f.get_string("general.architecture");
    if (!arch || arch->empty())
        fail(BASALT_ERR_FORMAT, "{}: required metadata 'general.architecture' is missing", f.source());
    h.arch = *arch;
    h.name = f.get_string("general.name").value_or("");
    h.known_arch = arch_runnable(h.arch);
    const ArchSpec& spec = arch_spec(h.arch);
    const std::string A = h.arch + ".";
    if (spec.kind == ArchKind::CONTROL_VECTOR) {
        // A llama.cpp control vector: no model, one F32 "direction.N" per steered layer. It loads for its metadata
        // and tensors; n_embd is the directions' length (0 when there are none).
        h.n_layer = require_u32(f, A + "layer_count");
        for (const auto& t : f.tensors()) {
            if (t.name.rfind("direction.", 0) == 0) {
                h.n_embd = static_cast<uint32_t>(t.ne[0]);
                break;
            }
        }
        h.layer_sliding.assign(h.n_layer, false);
        return h;
    }

    h.n_layer = require_u32(f, A + "block_count");
    h.n_embd = require_u32(f, A + "embedding_length");
    if (spec.per_layer_attention) {
        read_per_layer_attention(f, A, h);
    } else {
        h.n_head = require_u32(f, A + "attention.head_count");
        h.n_head_kv = optional_u32(f, A + "attention.head_count_kv", h.n_head);
    }
    if (h.n_head == 0)
        fail(BASALT_ERR_FORMAT, "{}: required metadata '{}attention.head_count' is missing", f.source(), A);
    if (h.n_head_kv == 0 || (!spec.per_layer_attention && h.n_head % h.n_head_kv != 0)) {
        fail(BASALT_ERR_FORMAT, "{}: attention.head_count {} is not a multiple of head_count_kv {}", f.source(),
             h.n_head, h.n_head_kv);
    }
    const uint32_t default_head_dim = h.n_embd / h.n_head;
    h.head_dim_k = optional_u32(f, A + "attention.key_length", default_head_dim);
    h.head_dim_v = optional_u32(f, A + "attention.value_length", default_head_dim);
    if (h.head_dim_k == 0 || h.head_dim_v == 0) {
        fail(BASALT_ERR_FORMAT, "{}: head dimension is 0 (embedding_length {} / head_count {})", f.source(), h.n_embd,
             h.n_head);
    }
    if (h.n_ff == 0) h.n_ff = optional_u32(f, A + "feed_forward_length", 0);
    h.n_ctx_train = optional_u32(f, A + "context_length", 0);
    h.n_expert = optional_u32(f, A + "expert_count", 0);
    h.n_expert_used = optional_u32(f, A + "expert_used_count", 0);
    if (h.n_expert > 0 && (h.n_expert_used == 0 || h.n_expert_used > h.n_expert)) {
        fail(BASALT_ERR_FORMAT, "{}: expert_used_count {} must be in 1..expert_count {}", f.source(), h.n_expert_used,
             h.n_expert);
    }
    if (spec.shared_expert) h.n_ff_shexp = optional_u32(f, A + "expert_shared_feed_forward_length", h.n_ff);
    // qwen3moe: feed_forward_length is the (unused) dense width, the experts' own is this key.
    if (h.n_expert > 0) h.n_ff = optional_u32(f, A + "expert_feed_forward_length", h.n_ff);
    h.rope_freq_base = static_cast<float>(f.get_float(A + "rope.freq_base").value_or(spec.rope_freq_base));
    h.n_rot = spec.rope ? optional_u32(f, A + "rope.dimension_count", h.head_dim_k) : 0;
    h.rope_scaling = read_rope_scaling(f, h.arch, spec, h.n_ctx_train);
    h.rope_freq_scale = h.rope_scaling.freq_scale;
    h.rope_description = describe(h.rope_scaling, spec);
    if (spec.rope_finetuned_switch) {
        h.rope_on = f.get_bool(A + "rope.scaling.finetuned").value_or(true);
        if (!h.rope_on)
            h.rope_description = fmt::format("none (no layer rotates: {}rope.scaling.finetuned is false)", A);
    }
    // (An architecture without a builder is refused as such, not for its keys.)
    if (h.known_arch && !h.rope_scaling.refusal.empty()) h.unimplemented = h.rope_scaling.refusal;
    for (const char* cap : {"attn_logit_softcapping", "final_logit_softcapping"}) {
        const auto v = f.get_float(A + cap);
        if (v && *v != 0.0 && !spec.soft_caps && h.unimplemented.empty() && h.known_arch) {
            h.unimplemented =
                fmt::format("'{}{}' = {} (soft-capping) is not applied by the {} graph", A, cap, *v, h.arch);
        }
    }
    if (auto eps = f.get_float(A + "attention.layer_norm_rms_epsilon")) {
        h.norm_eps = static_cast<float>(*eps);
    } else if (auto eps2 = f.get_float(A + "attention.layer_norm_epsilon")) {
        h.norm_eps = static_cast<float>(*eps2);
    }

    // Vocabulary size: explicit key, else the tokenizer, else the embedding matrix.
    h.n_vocab = optional_u32(f, A + "vocab_size", 0);
    if (h.n_vocab == 0) {
        if (const auto* tok = f.find("tokenizer.ggml.tokens"); tok != nullptr && tok->type == gguf::ValueType::ARRAY) {
            h.n_vocab = static_cast<uint32_t>(tok->array_size());
        } else if (const auto* emb = f.tensor("token_embd.weight"); emb != nullptr && emb->n_dims >= 2) {
            h.n_vocab = static_cast<uint32_t>(emb->ne[1]);
        }
    }
    if (h.n_vocab == 0) fail(BASALT_ERR_FORMAT, "{}: cannot determine the vocabulary size", f.source());

    h.sliding_window =
        spec.ignore_sliding_window ? 0 : optional_u32(f, A + "attention.sliding_window", spec.sliding_window);
    if (spec.attn_soft_cap > 0.f)
        h.attn_soft_cap = static_cast<float>(f.get_float(A + "attn_logit_softcapping").value_or(spec.attn_soft_cap));
    if (spec.final_soft_cap > 0.f)
        h.final_soft_cap = static_cast<float>(f.get_float(A + "final_logit_softcapping").value_or(spec.final_soft_cap));
    if (!std::isfinite(h.attn_soft_cap) || h.attn_soft_cap < 0.f || !std::isfinite(h.final_soft_cap) ||
        h.final_soft_cap < 0.f) {
        fail(BASALT_ERR_FORMAT, "{}: {}attn_logit_softcapping {} / final_logit_softcapping {} must be finite and >= 0",
             f.source(), A, h.attn_soft_cap, h.final_soft_cap);
    }
    h.layer_sliding.assign(h.n_layer, false);
    if (h.sliding_window > 0) {
        // Every pattern-th layer is global (Gemma 3: 5 sliding-window layers, then 1 global); 1: all slide.
        const uint32_t pattern = spec.sliding_pattern;
        for (uint32_t il = 0; il < h.n_layer; ++il) h.layer_sliding[il] = pattern == 1 || (il % pattern) < pattern - 1;
        // The file's own pattern where the architecture has one (llama.cpp's reading: an array of per-layer flags,
        // or N: every Nth layer global, 0: every layer slides).
        if (const gguf::Value* v = f.find(A + "attention.sliding_window_pattern"); v != nullptr && pattern > 1) {
            if (v->type == gguf::ValueType::ARRAY) {
                if (v->array_size() != h.n_layer) {
                    fail(BASALT_ERR_FORMAT, "{}: {}attention.sliding_window_pattern has {} entries for {} layers",
                         f.source(), A, v->array_size(), h.n_layer);
                }
                for (uint32_t il = 0; il < h.n_layer; ++il) {
                    const gguf::Value e = v->element(il);
                    h.layer_sliding[il] = e.type == gguf::ValueType::BOOL ? e.u != 0 : e.as_int().value_or(0) != 0;
                }
            } else {
                const uint32_t n = optional_u32(f, A + "attention.sliding_window_pattern", pattern);
                for (uint32_t il = 0; il < h.n_layer; ++il) h.layer_sliding[il] = n == 0 || (il % n) < n - 1;
            }
        }
    }

    if (spec.per_layer_attention) read_shared_kv(f, A, h);

    if (spec.recurrent) {
        h.ssm_conv_kernel = require_u32(f, A + "ssm.conv_kernel");
        h.ssm_d_state = require_u32(f, A + "ssm.state_size");
        h.ssm_n_group = require_u32(f, A + "ssm.group_count");
        h.ssm_dt_rank = require_u32(f, A + "ssm.time_step_rank");
        h.ssm_d_inner = require_u32(f, A + "ssm.inner_size");
        const uint32_t interval = optional_u32(f, A + "full_attention_interval", spec.full_attention_interval);
        if (h.ssm_conv_kernel < 2 || h.ssm_d_inner % h.ssm_dt_rank != 0 || h.ssm_dt_rank % h.ssm_n_group != 0 ||
            interval == 0) {
            fail(BASALT_ERR_FORMAT,
                 "{}: {}ssm.conv_kernel {} (>= 2), inner_size {} / time_step_rank {} / group_count {} (each a multiple "
                 "of the next) or full_attention_interval {} (>= 1) is invalid",
                 f.source(), A, h.ssm_conv_kernel, h.ssm_d_inner, h.ssm_dt_rank, h.ssm_n_group, interval);
        }
        h.layer_recurrent.assign(h.n_layer, false);
        for (uint32_t il = 0; il < h.n_layer; ++il) h.layer_recurrent[il] = (il + 1) % interval != 0;
    }
    h.embedding_scale = static_cast<float>(f.get_float(A + "embedding_scale").value_or(0.0));
    h.residual_scale = static_cast<float>(f.get_float(A + "residual_scale").value_or(0.0));
    h.attention_scale = static_cast<float>(f.get_float(A + "attention.scale").value_or(0.0));
    h.logit_scale = static_cast<float>(f.get_float(A + "logit_scale").value_or(0.0));

    h.learned_positions = spec.learned_positions;
    h.ffn_mats = spec.ffn_mats;
    h.encoder_only = spec.kind == ArchKind::ENCODER;
    if (const auto pooling = f.get_int(A + "pooling_type")) {
        if (*pooling < 0 || *pooling > 4) {
            fail(BASALT_ERR_FORMAT, "{}: {}pooling_type = {} is not one of 0 none, 1 mean, 2 cls, 3 last, 4 rank",
                 f.source(), A, *pooling);
        }
        h.pooling = static_cast<int32_t>(*pooling);
    }
    // A decoder whose file names a pooling of hidden rows (mean, cls, last: Qwen3-Embedding's converter writes
    // last) is a decoder embedder: it runs as an embedding model, attending causally as it was trained.
    if (spec.kind == ArchKind::DECODER && spec.embed_pass && h.pooling >= 1 && h.pooling <= 3) {
        h.encoder_only = true;
        h.embed_causal = true;
    }
    // The rank head's last projection: cls.output, or cls alone (a single-layer head, jina-reranker-v1 style).
    const auto* head = f.tensor("cls.output.weight");
    if (head == nullptr) head = f.tensor("cls.weight");
    if (head != nullptr) h.n_cls_out = head->n_dims >= 2 ? static_cast<uint32_t>(head->ne[1]) : 1;
    if (spec.kind == ArchKind::ENCODER_DECODER) {
        h.encoder_decoder = true;
        h.n_layer_dec = optional_u32(f, A + "decoder_block_count", h.n_layer);
        h.n_rel_buckets = optional_u32(f, A + "attention.relative_buckets_count", spec.rel_buckets);
        h.decoder_start_token = static_cast<int32_t>(optional_u32(f, A + "decoder_start_token_id", 0));
        if (h.n_rel_buckets < 4 || h.n_rel_buckets > 4096) {
            fail(BASALT_ERR_FORMAT, "{}: {}attention.relative_buckets_count = {} is not in 4..4096", f.source(), A,
                 h.n_rel_buckets);
        }
        if (h.n_layer_dec == 0) fail(BASALT_ERR_FORMAT, "{}: {}decoder_block_count is 0", f.source(), A);
        if (static_cast<uint32_t>(h.decoder_start_token) >= h.n_vocab) {
            fail(BASALT_ERR_FORMAT, "{}: {}decoder_start_token_id = {} is not in the vocabulary of {}", f.source(), A,
                 h.decoder_start_token, h.n_vocab);
        }
    }
    return h;
}

}  // namespace basalt
