// t5 (encoder-decoder; flan-T5 style): RMS norm without mean or bias, attention without 1/sqrt(d) scaling and with
// a relative position bias (bucketed distances, the table of layer 0 shared by every layer unless a layer has its
// own), gated-GELU FFN. Two passes over the same weights:
// - encoder pass: bidirectional self-attention over the batch's own K/V rows (each sequence sees its source tokens),
//   then every decoder layer's cross-attention K and V of the encoder output, written once into the cross storage;
// - decoder pass: causal self-attention through the KV cache, cross-attention over the sequence's cross rows, and
//   the lm head (a tied head rescales by d_model^-1/2 as T5 does).
#include <cmath>

#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

int32_t linear(ForwardContext& c, int32_t x, const std::string& w, int64_t n_out, const std::string& name) {
    const int32_t wt = c.weight(w, {c.g.ne(x, 0), n_out});
    return c.g.op(BASALT_OP_MATMUL, name, BASALT_DTYPE_F32, {n_out, c.g.ne(x, 1)}, {wt, x});
}

int32_t heads(ForwardContext& c, int32_t x, int64_t hd, int64_t n_head, const std::string& name) {
    return c.g.op(BASALT_OP_COPY, name, BASALT_DTYPE_F32, {hd, n_head, c.g.ne(x, 1)}, {x});
}

// The bias table by clamped distance [n_head, 2R + 1] of the stack ("enc" or "dec") at layer il: the layer's own
// attn_rel_b when it has one, else layer 0's.
int32_t position_bias(ForwardContext& c, const std::string& stack, uint32_t il, std::vector<int32_t>& cache) {
    const auto& hp = c.hp;
    std::string name = stack + ".blk." + std::to_string(il) + ".attn_rel_b.weight";
    uint32_t owner = il;
    if (!c.has_weight(name)) {
        owner = 0;
        name = stack + ".blk.0.attn_rel_b.weight";
    }
    if (cache.size() <= owner) cache.resize(owner + 1, -1);
    if (cache[owner] < 0) {
        const int32_t table = c.weight(name, {hp.n_head, hp.n_rel_buckets});
        cache[owner] = c.g.op(BASALT_OP_GET_ROWS, stack + ".blk." + std::to_string(owner) + ".pos_bias",
                              BASALT_DTYPE_F32, {hp.n_head, c.g.ne(c.rel_index, 0)}, {table, c.rel_index});
    }
    return cache[owner];
}

int32_t ffn(ForwardContext& c, const std::string& p, int32_t h) {
    const auto& hp = c.hp;
    if (!c.has_weight(p + "ffn_gate.weight")) {
        fail(BASALT_ERR_UNSUPPORTED,
             "{}: t5 without '{}ffn_gate.weight' (the original ReLU feed-forward) is not supported; gated-GELU "
             "(flan-T5 style) models are",
             c.weights.source(), p);
    }
    const int32_t gate = linear(c, h, p + "ffn_gate.weight", hp.n_ff, p + "ffn_gate");
    const int32_t up = linear(c, h, p + "ffn_up.weight", hp.n_ff, p + "ffn_up");
    const int32_t a = c.g.op(BASALT_OP_GEGLU, p + "ffn_act", BASALT_DTYPE_F32, {hp.n_ff, c.n_tokens}, {gate, up});
    return linear(c, a, p + "ffn_down.weight", hp.n_embd, p + "ffn_down");
}

// T5 attention: no score scaling; flags ip[5] bit 0 = not causal; bias: the position-bias table or -1.
int32_t attend(ForwardContext& c, const std::string& name, int32_t q, int32_t k, int32_t v, int32_t lists, bool causal,
               int32_t bias) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    const int32_t flags = causal ? 0 : 1;
    if (bias >= 0) {
        return c.g.op(BASALT_OP_ATTENTION, name, BASALT_DTYPE_F32, {hp.n_head * hp.head_dim_v, T},
                      {q, k, v, lists, c.attn_query, bias},
                      {{op::attention::flags, flags}, {op::attention::scale, 1.f}});
    }
    return c.g.op(BASALT_OP_ATTENTION, name, BASALT_DTYPE_F32, {hp.n_head * hp.head_dim_v, T},
                  {q, k, v, lists, c.attn_query}, {{op::attention::flags, flags}, {op::attention::scale, 1.f}});
}

void build_encoder(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens, E = hp.n_embd, hd_k = hp.head_dim_k, hd_v = hp.head_dim_v;
    const int64_t nq = hp.n_head * hd_k, nk = hp.n_head_kv * hd_k, nv = hp.n_head_kv * hd_v;
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "enc.token_embd", BASALT_DTYPE_F32, {E, T},
                       {c.weight("token_embd.weight", {E, hp.n_vocab}), c.tokens});
    std::vector<int32_t> biases;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "enc.blk." + std::to_string(il) + ".";
        const int32_t h = rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm");
        const int32_t q = heads(c, linear(c, h, p + "attn_q.weight", nq, p + "q"), hd_k, hp.n_head, p + "q.heads");
        // The encoder's K/V are this pass's own rows: the slot lists name batch rows.
        const int32_t k = linear(c, h, p + "attn_k.weight", nk, p + "k");
        const int32_t v = linear(c, h, p + "attn_v.weight", nv, p + "v");
        const int32_t att =
            attend(c, p + "attention", q, k, v, c.attn_lists, false, position_bias(c, "enc", il, biases));
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {E, T},
                   {x, linear(c, att, p + "attn_o.weight", E, p + "attn_out")});
        const int32_t f = ffn(c, p, rms_norm(c, x, p + "ffn_norm.weight", p + "ffn_norm"));
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {E, T}, {x, f});
    }
    const int32_t enc = rms_norm(c, x, "enc.output_norm.weight", "enc.output_norm");
    // Cross-attention K/V of every decoder layer, computed once per source and kept for every decoder step.
    for (uint32_t il = 0; il < hp.n_layer_dec; ++il) {
        const std::string p = "dec.blk." + std::to_string(il) + ".";
        const auto il_u = static_cast<size_t>(il);
        const int32_t k = linear(c, enc, p + "cross_attn_k.weight", nk, p + "cross_k");
        const int32_t v = linear(c, enc, p + "cross_attn_v.weight", nv, p + "cross_v");
        c.g.node(BASALT_OP_KV_WRITE, p + "cross_k.write", c.cross_k[il_u], {k, c.cross_k[il_u], c.cross_slots});
        c.g.node(BASALT_OP_KV_WRITE, p + "cross_v.write", c.cross_v[il_u], {v, c.cross_v[il_u], c.cross_slots});
    }
}

void build_decoder(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens, E = hp.n_embd, hd_k = hp.head_dim_k, hd_v = hp.head_dim_v;
    const int64_t nq = hp.n_head * hd_k, nk = hp.n_head_kv * hd_k, nv = hp.n_head_kv * hd_v;
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "dec.token_embd", BASALT_DTYPE_F32, {E, T},
                       {c.weight("token_embd.weight", {E, hp.n_vocab}), c.tokens});
    std::vector<int32_t> biases;
    for (uint32_t il = 0; il < hp.n_layer_dec; ++il) {
        const std::string p = "dec.blk." + std::to_string(il) + ".";
        const auto il_u = static_cast<size_t>(il);
        // Causal self-attention through the KV cache.
        int32_t h = rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm");
        int32_t q = heads(c, linear(c, h, p + "attn_q.weight", nq, p + "q"), hd_k, hp.n_head, p + "q.heads");
        const int32_t k = linear(c, h, p + "attn_k.weight", nk, p + "k");
        const int32_t v = linear(c, h, p + "attn_v.weight", nv, p + "v");
        c.g.node(BASALT_OP_KV_WRITE, p + "k.cache_write", c.k_cache[il_u], {k, c.k_cache[il_u], c.kv_slots});
        c.g.node(BASALT_OP_KV_WRITE, p + "v.cache_write", c.v_cache[il_u], {v, c.v_cache[il_u], c.kv_slots});
        int32_t att = attend(c, p + "attention", q, c.k_cache[il_u], c.v_cache[il_u], c.attn_lists, true,
                             position_bias(c, "dec", il, biases));
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {E, T},
                   {x, linear(c, att, p + "attn_o.weight", E, p + "attn_out")});
        // Cross-attention over the sequence's encoder output (its K/V rows written by the encoder pass).
        h = rms_norm(c, x, p + "cross_attn_norm.weight", p + "cross_attn_norm");
        q = heads(c, linear(c, h, p + "cross_attn_q.weight", nq, p + "cross_q"), hd_k, hp.n_head, p + "cross_q.heads");
        att = attend(c, p + "cross_attention", q, c.cross_k[il_u], c.cross_v[il_u], c.cross_lists, false, -1);
        x = c.g.op(BASALT_OP_ADD, p + "cross_residual", BASALT_DTYPE_F32, {E, T},
                   {x, linear(c, att, p + "cross_attn_o.weight", E, p + "cross_out")});
        const int32_t f = ffn(c, p, rms_norm(c, x, p + "ffn_norm.weight", p + "ffn_norm"));
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {E, T}, {x, f});
    }
    if (c.n_outputs == 0) return;
    int32_t y = rms_norm(c, select_output_rows(c, x), "dec.output_norm.weight", "dec.output_norm");
    const bool tied = !c.has_weight("output.weight");
    if (tied) {  // T5 scales the decoder output by d_model^-1/2 before a head tied to the embeddings
        y = c.g.op(BASALT_OP_SCALE, "output.rescale", BASALT_DTYPE_F32, {E, c.n_outputs}, {y},
                   {{op::scale::factor, 1.0f / std::sqrt(static_cast<float>(E))}});
    }
    c.g.node(BASALT_OP_MATMUL, "output", c.logits,
             {c.weight(tied ? "token_embd.weight" : "output.weight", {E, hp.n_vocab}), y});
}

}  // namespace

int32_t t5_bucket(int32_t distance, uint32_t n_buckets, bool bidirectional, uint32_t max_distance) {
    // distance = key position - query position.
    int32_t bucket = 0;
    int64_t rel = distance;
    auto nb = static_cast<int64_t>(n_buckets);
    if (bidirectional) {
        nb /= 2;
        if (rel > 0) bucket += static_cast<int32_t>(nb);
        rel = rel < 0 ? -rel : rel;
    } else {
        rel = rel < 0 ? -rel : 0;
    }
    const int64_t max_exact = nb / 2;
    if (rel < max_exact) return bucket + static_cast<int32_t>(rel);
    const double large = std::floor(static_cast<double>(max_exact) +
                                    std::log(static_cast<double>(rel) / static_cast<double>(max_exact)) *
                                        static_cast<double>(nb - max_exact) /
                                        std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
    return bucket + static_cast<int32_t>(std::min<double>(large, static_cast<double>(nb - 1)));
}

std::vector<int32_t> t5_bucket_table(const ModelHparams& hp, bool bidirectional) {
    const auto r = static_cast<int32_t>(hp.rel_max_distance);
    std::vector<int32_t> out;
    out.reserve(static_cast<size_t>(2 * r + 1));
    for (int32_t d = -r; d <= r; ++d) out.push_back(t5_bucket(d, hp.n_rel_buckets, bidirectional, hp.rel_max_distance));
    return out;
}

void build_t5(ForwardContext& c) {
    if (c.encoder_pass) {
        build_encoder(c);
    } else {
        build_decoder(c);
    }
}

}  // namespace basalt
