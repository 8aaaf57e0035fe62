// bert (embedding models): token + token-type row 0 + learned position embeddings, LayerNorm(bias) on the sum,
// post-LN blocks (attention with q/k/v/o biases, not causal; GELU FFN with biases), no LM head. nomic-bert: the same
// block with neox rope in place of the position table, fused qkv and a SwiGLU FFN. The pass is an
// encoder pass: each input attends over its own rows (c.attn_lists pairs are (batch row, position)); the final
// hidden rows go to c.embd_out for pooling, and a rank head, when asked, scores c.pool_rows.
#include <cmath>

#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

int32_t layer_norm(ForwardContext& c, int32_t x, const std::string& prefix) {
    const int64_t E = c.hp.n_embd, T = c.g.ne(x, 1);
    const int32_t n = c.g.op(BASALT_OP_LAYER_NORM, prefix + ".norm", BASALT_DTYPE_F32, {E, T}, {x},
                             {{op::layer_norm::eps, c.hp.norm_eps}});
    const int32_t w =
        c.g.op(BASALT_OP_MUL, prefix + ".scale", BASALT_DTYPE_F32, {E, T}, {n, c.weight(prefix + ".weight", {E})});
    return c.g.op(BASALT_OP_ADD, prefix, BASALT_DTYPE_F32, {E, T}, {w, c.weight(prefix + ".bias", {E})});
}

// x [n_in, T] -> W x (+ b when the file has the bias).
int32_t linear(ForwardContext& c, int32_t x, const std::string& w, int64_t n_out, const std::string& name) {
    const int64_t T = c.g.ne(x, 1);
    const int32_t y = c.g.op(BASALT_OP_MATMUL, name, BASALT_DTYPE_F32, {n_out, T},
                             {c.weight(w + ".weight", {c.g.ne(x, 0), n_out}), x});
    if (!c.has_weight(w + ".bias")) return y;
    return c.g.op(BASALT_OP_ADD, name + ".bias", BASALT_DTYPE_F32, {n_out, T}, {y, c.weight(w + ".bias", {n_out})});
}

}  // namespace

void rank_head(ForwardContext& c, int32_t x) {
    const int64_t E = c.hp.n_embd, n = c.g.ne(x, 1), n_out = c.hp.n_cls_out;
    int32_t y = x;
    if (c.has_weight("cls.output.weight")) {
        y = c.g.op(BASALT_OP_TANH, "cls.act", BASALT_DTYPE_F32, {E, n}, {linear(c, y, "cls", E, "cls")});
        y = linear(c, y, "cls.output", n_out, "cls.output");
    } else {
        y = linear(c, y, "cls", n_out, "cls");
    }
    c.g.node(BASALT_OP_COPY, "rank_scores", c.rank_out, {y});
}

namespace {

// q, k, v [n, T] of layer p: one fused attn_qkv [n_embd, q | k | v] (three row ranges, with attn_qkv.bias or
// separate q/k/v biases when the file has them) or separate attn_q/k/v with their optional biases.
void qkv(ForwardContext& c, int32_t x, const std::string& p, int64_t nq, int64_t nkv, int32_t out[3]) {
    const int64_t T = c.g.ne(x, 1);
    if (!c.has_weight(p + "attn_qkv.weight")) {
        out[0] = linear(c, x, p + "attn_q", nq, p + "q");
        out[1] = linear(c, x, p + "attn_k", nkv, p + "k");
        out[2] = linear(c, x, p + "attn_v", nkv, p + "v");
        return;
    }
    const auto w = c.weights.require(p + "attn_qkv.weight", c.hp.arch);
    ModelWeights::expect_shape(w, {c.hp.n_embd, nq + 2 * nkv}, c.weights.source());
    const int64_t first[3] = {0, nq, nq + nkv}, n[3] = {nq, nkv, nkv};
    const char* name[3] = {"q", "k", "v"};
    const bool fused_bias = c.has_weight(p + "attn_qkv.bias");
    for (int i = 0; i < 3; ++i) {
        out[i] = c.g.op(BASALT_OP_MATMUL, p + name[i], BASALT_DTYPE_F32, {n[i], T},
                        {c.weight(ModelWeights::rows(w, first[i], n[i])), x});
        const std::string sep = p + "attn_" + name[i] + ".bias";
        int32_t b = -1;
        if (fused_bias) {
            b = c.weight(ModelWeights::rows(c.weights.require(p + "attn_qkv.bias", c.hp.arch), first[i], n[i]));
        } else if (c.has_weight(sep)) {
            b = c.weight(sep, {n[i]});
        }
        if (b >= 0) out[i] = c.g.op(BASALT_OP_ADD, p + name[i] + ".bias", BASALT_DTYPE_F32, {n[i], T}, {out[i], b});
    }
}

// bert and nomic-bert: `rotary` selects nomic's rope (neox, no position table) and SwiGLU FFN (no biases, as
// llama.cpp runs it) over bert's learned positions and GELU FFN with biases.
void build_bert_family(ForwardContext& c, bool rotary) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens, E = hp.n_embd, hd = hp.head_dim_k, nq = hp.n_head * hd;
    const int64_t nkv = hp.n_head_kv * hd;
    if (hp.head_dim_k != hp.head_dim_v) {
        fail(BASALT_ERR_FORMAT, "{}: {} needs key_length {} == value_length {}", c.weights.source(), hp.arch,
             hp.head_dim_k, hp.head_dim_v);
    }
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {E, T},
                       {c.weight("token_embd.weight", {E, hp.n_vocab}), c.tokens});
    // Token types are all 0 ("sentence A"), as llama.cpp runs them: row 0 of token_types added to every token.
    if (c.has_weight("token_types.weight")) {
        const auto types = c.weights.require("token_types.weight", hp.arch);
        x = c.g.op(BASALT_OP_ADD, "inp_types", BASALT_DTYPE_F32, {E, T},
                   {x, c.weight(ModelWeights::rows(types, 0, 1))});
    }
    if (!rotary) {
        const int32_t pos = c.g.op(BASALT_OP_GET_ROWS, "position_embd", BASALT_DTYPE_F32, {E, T},
                                   {c.weight("position_embd.weight"), c.positions});
        x = c.g.op(BASALT_OP_ADD, "inp_embd", BASALT_DTYPE_F32, {E, T}, {x, pos});
    }
    x = layer_norm(c, x, "token_embd_norm");
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        int32_t r[3];
        qkv(c, x, p, nq, nkv, r);
        int32_t q = c.g.op(BASALT_OP_COPY, p + "q.heads", BASALT_DTYPE_F32, {hd, hp.n_head, T}, {r[0]});
        int32_t k = r[1];
        if (rotary) {
            q = rope(c, q, hp.n_head, 1, hp.rope_freq_base, true, p + "q.rope");
            k = c.g.op(BASALT_OP_COPY, p + "k.heads", BASALT_DTYPE_F32, {hd, hp.n_head_kv, T}, {k});
            k = rope(c, k, hp.n_head_kv, 1, hp.rope_freq_base, true, p + "k.rope");
            k = c.g.op(BASALT_OP_COPY, p + "k.rows", BASALT_DTYPE_F32, {nkv, T}, {k});
        }
        // Bidirectional over the input's own rows (flags bit 0: not causal).
        const int32_t att = c.g.op(BASALT_OP_ATTENTION, p + "attention", BASALT_DTYPE_F32, {nq, T},
                                   {q, k, r[2], c.attn_lists, c.attn_query},
                                   {{op::attention::flags, 1}, {op::attention::scale, scale}});
        const int32_t o = linear(c, att, p + "attn_output", E, p + "attn_out");
        x = layer_norm(c, c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {E, T}, {o, x}),
                       p + "attn_output_norm");
        int32_t down = -1;
        if (rotary) {
            const int32_t gate = c.g.op(BASALT_OP_MATMUL, p + "ffn_gate", BASALT_DTYPE_F32, {hp.n_ff, T},
                                        {c.weight(p + "ffn_gate.weight", {E, hp.n_ff}), x});
            const int32_t up = c.g.op(BASALT_OP_MATMUL, p + "ffn_up", BASALT_DTYPE_F32, {hp.n_ff, T},
                                      {c.weight(p + "ffn_up.weight", {E, hp.n_ff}), x});
            const int32_t act = c.g.op(BASALT_OP_SWIGLU, p + "ffn_act", BASALT_DTYPE_F32, {hp.n_ff, T}, {gate, up});
            down = c.g.op(BASALT_OP_MATMUL, p + "ffn_down", BASALT_DTYPE_F32, {E, T},
                          {c.weight(p + "ffn_down.weight", {hp.n_ff, E}), act});
        } else {
            const int32_t up = linear(c, x, p + "ffn_up", hp.n_ff, p + "ffn_up");
            const int32_t act = c.g.op(BASALT_OP_GELU, p + "ffn_act", BASALT_DTYPE_F32, {hp.n_ff, T}, {up});
            down = linear(c, act, p + "ffn_down", E, p + "ffn_down");
        }
        x = layer_norm(c, c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {E, T}, {down, x}),
                       p + "layer_output_norm");
    }
    if (c.embd_out >= 0) c.g.node(BASALT_OP_COPY, "embd", c.embd_out, {x});
    if (c.rank_out >= 0) {
        rank_head(c, c.g.op(BASALT_OP_GET_ROWS, "pool.rows", BASALT_DTYPE_F32, {E, c.g.ne(c.pool_rows, 0)},
                            {x, c.pool_rows}));
    }
}

}  // namespace

void build_bert(ForwardContext& c) {
    build_bert_family(c, false);
}

void build_nomic_bert(ForwardContext& c) {
    build_bert_family(c, true);
}

}  // namespace basalt
