#include "model/model-hparams.hpp"

#include <cmath>

#include "graph/arch-table.hpp"
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
    h.n_head = require_u32(f, A + "attention.head_count");
    h.n_head_kv = optional_u32(f, A + "attention.head_count_kv", h.n_head);
    if (h.n_head_kv == 0 || h.n_head % h.n_head_kv != 0) {
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
    h.n_ff = optional_u32(f, A + "feed_forward_length", 0);
    h.n_ctx_train = optional_u32(f, A + "context_length", 0);
    h.n_expert = optional_u32(f, A + "expert_count", 0);
    h.n_expert_used = optional_u32(f, A + "expert_used_count", 0);
    if (h.n_expert > 0 && (h.n_expert_used == 0 || h.n_expert_used > h.n_expert)) {
        fail(BASALT_ERR_FORMAT, "{}: expert_used_count {} must be in 1..expert_count {}", f.source(), h.n_expert_used,
             h.n_expert);
    }
    // qwen3moe: feed_forward_length is the (unused) dense width, the experts' own is this key.
    if (h.n_expert > 0) h.n_ff = optional_u32(f, A + "expert_feed_forward_length", h.n_ff);
    h.rope_freq_base = static_cast<float>(f.get_float(A + "rope.freq_base").value_or(spec.rope_freq_base));
    h.n_rot = spec.rope ? optional_u32(f, A + "rope.dimension_count", h.head_dim_k) : 0;
    h.rope_scaling = read_rope_scaling(f, h.arch, spec, h.n_ctx_train);
    h.rope_freq_scale = h.rope_scaling.freq_scale;
    h.rope_description = describe(h.rope_scaling, spec);
    // (An architecture without a builder is refused as such, not for its keys.)
    if (h.known_arch) h.unimplemented = h.rope_scaling.refusal;
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
            h.n_vocab = static_cast<uint32_t>(tok->array.size());
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
                if (v->array.size() != h.n_layer) {
                    fail(BASALT_ERR_FORMAT, "{}: {}attention.sliding_window_pattern has {} entries for {} layers",
                         f.source(), A, v->array.size(), h.n_layer);
                }
                for (uint32_t il = 0; il < h.n_layer; ++il) {
                    const gguf::Value& e = v->array[il];
                    h.layer_sliding[il] = e.type == gguf::ValueType::BOOL ? e.u != 0 : e.as_int().value_or(0) != 0;
                }
            } else {
                const uint32_t n = optional_u32(f, A + "attention.sliding_window_pattern", pattern);
                for (uint32_t il = 0; il < h.n_layer; ++il) h.layer_sliding[il] = n == 0 || (il % n) < n - 1;
            }
        }
    }

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
