// gemma4: the gemma block (embeddings times sqrt(n_embd), post-attention and post-FFN norms, GeGLU) with per-layer
// attention shapes: sliding-window layers have their own head size, rotated dims and rope base, full layers rotate
// with the file's frequency factors ("proportional" rope: a factor of 1e30 leaves a pair unrotated). Q and K get RMS
// norms with weights, V a weightless RMS norm; a layer without attn_v uses its raw K projection as V. Scores are not
// scaled (scale 1). Each layer's output is multiplied by its layer_output_scale.
// The small layouts (E2B, E4B; llama.cpp's src/models/gemma4.cpp) add:
// - per-layer embeddings (hp.n_embd_per_layer = P): each layer's own input, a row of per_layer_token_embd (times
//   sqrt(P)) plus the RMS-normed projection of the scaled embeddings (per_layer_model_proj, times 1/sqrt(n_embd)), both
//   times 1/sqrt(2); after the FFN residual each layer adds post_norm(proj(GELU(inp_gate(x)) * its input));
// - KV sharing: the last attention.shared_kv_layers layers compute no K/V and attend over the cache of the last
//   earlier layer of their kind (hp.kv_source), the only one with storage;
// - FFN widths per layer (hp.n_ff_at: the sharing layers' MLP is twice as wide).
#include <cmath>

#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {

namespace {

int32_t project(ForwardContext& c, int32_t h, const std::string& w, int64_t n_out, const std::string& name) {
    return c.g.op(BASALT_OP_MATMUL, name, BASALT_DTYPE_F32, {n_out, c.n_tokens},
                  {c.weight(w, {c.hp.n_embd, n_out}), h});
}

// Layer il's K and V from the normed input h, written to its cache.
void write_gemma4_kv(ForwardContext& c, uint32_t il, int32_t h) {
    const auto& hp = c.hp;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t T = c.n_tokens, hd = hp.head_dim_k_at(il), nkv = hp.n_head_kv_at(il);
    const bool sliding = hp.layer_sliding[il];
    const float base = sliding ? hp.rope_scaling.freq_base_swa : hp.rope_freq_base;
    const int32_t k_proj = project(c, h, p + "attn_k.weight", nkv * hd, p + "k");
    const int32_t v_proj = c.has_weight(p + "attn_v.weight") ? project(c, h, p + "attn_v.weight", nkv * hd, p + "v")
                                                             : k_proj;  // attention_k_eq_v: V is K's projection
    int32_t k = c.g.op(BASALT_OP_COPY, p + "k.heads", BASALT_DTYPE_F32, {hd, nkv, T}, {k_proj});
    k = rms_norm(c, k, p + "attn_k_norm.weight", p + "k.normed");
    k = rope(c, k, nkv, 1, base, !sliding, p + "k.rope", hp.n_rot_at(il));
    int32_t v = c.g.op(BASALT_OP_COPY, p + "v.heads", BASALT_DTYPE_F32, {hd, nkv, T}, {v_proj});
    v = c.g.op(BASALT_OP_RMS_NORM, p + "v.normed", BASALT_DTYPE_F32, {hd, nkv, T}, {v},
               {{op::rms_norm::eps, hp.norm_eps}});
    const int32_t k_rows = c.g.op(BASALT_OP_COPY, p + "k.rows", BASALT_DTYPE_F32, {nkv * hd, T}, {k});
    const int32_t v_rows = c.g.op(BASALT_OP_COPY, p + "v.rows", BASALT_DTYPE_F32, {nkv * hd, T}, {v});
    const bool windowed = il < c.window_storage.size() && c.window_storage[il] != 0;
    write_kv(c, il, k_rows, v_rows, windowed ? c.kv_slots_window : c.kv_slots, p);
}

// Layer il's self-attention on the normed input h [n_embd, T]: out [n_embd, T].
int32_t gemma4_attention(ForwardContext& c, uint32_t il, int32_t h) {
    const auto& hp = c.hp;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t T = c.n_tokens, hd = hp.head_dim_k_at(il), nh = hp.n_head_at(il);
    if (hp.head_dim_v_at(il) != hd) {
        fail(BASALT_ERR_FORMAT, "{}: gemma4 needs equal key and value head sizes (layer {}: {} and {})",
             c.weights.source(), il, hd, hp.head_dim_v_at(il));
    }
    const bool sliding = hp.layer_sliding[il];
    const float base = sliding ? hp.rope_scaling.freq_base_swa : hp.rope_freq_base;

    int32_t q = project(c, h, p + "attn_q.weight", nh * hd, p + "q");
    q = c.g.op(BASALT_OP_COPY, p + "q.heads", BASALT_DTYPE_F32, {hd, nh, T}, {q});
    q = rms_norm(c, q, p + "attn_q_norm.weight", p + "q.normed");
    // Full layers: the file's frequency factors (rope_scaled); sliding-window layers: plain rope at their base.
    q = rope(c, q, nh, 1, base, !sliding, p + "q.rope", hp.n_rot_at(il));

    // KV sharing: the source layer (same kind and K/V shape: read_hparams checks) wrote this step's rows already.
    const uint32_t src = hp.kv_source(il);
    if (src == il) write_gemma4_kv(c, il, h);
    const bool windowed = src < c.window_storage.size() && c.window_storage[src] != 0;
    const int32_t window = sliding ? static_cast<int32_t>(hp.sliding_window) : 0;
    const int32_t att =
        attend(c, src, q, windowed ? c.attn_lists_window : c.attn_lists, nh * hd, window, 1.0f, 0.0f, p);
    return c.g.op(BASALT_OP_MATMUL, p + "attn_out", BASALT_DTYPE_F32, {hp.n_embd, T},
                  {c.weight(p + "attn_output.weight", {nh * hd, hp.n_embd}), att});
}

// Layer il's GeGLU FFN at its own width.
int32_t gemma4_ffn(ForwardContext& c, uint32_t il, int32_t h) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t T = c.n_tokens, E = c.hp.n_embd, F = c.hp.n_ff_at(il);
    const int32_t gate = project(c, h, p + "ffn_gate.weight", F, p + "ffn_gate");
    const int32_t up = project(c, h, p + "ffn_up.weight", F, p + "ffn_up");
    const int32_t a = c.g.op(BASALT_OP_GEGLU, p + "ffn_act", BASALT_DTYPE_F32, {F, T}, {gate, up});
    return c.g.op(BASALT_OP_MATMUL, p + "ffn_down", BASALT_DTYPE_F32, {E, T},
                  {c.weight(p + "ffn_down.weight", {F, E}), a});
}

// Every layer's input of the per-layer embeddings, F32 [P * n_layer, T] (layer il's are rows il*P .. il*P + P - 1),
// from the token ids and the scaled embeddings x [n_embd, T]. (COPY reshapes [P * n_layer, T] to [P, n_layer, T] and
// back, so that RMS_NORM normalises each layer's P values.)
int32_t per_layer_inputs(ForwardContext& c, int32_t x) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens, E = hp.n_embd, P = hp.n_embd_per_layer, L = hp.n_layer;
    int32_t tok = c.g.op(BASALT_OP_GET_ROWS, "per_layer_token_embd", BASALT_DTYPE_F32, {P * L, T},
                         {c.weight("per_layer_token_embd.weight", {P * L, hp.n_vocab}), c.tokens});
    tok = c.g.op(BASALT_OP_COPY, "per_layer_token_embd.layers", BASALT_DTYPE_F32, {P, L, T}, {tok});
    tok = c.g.op(BASALT_OP_SCALE, "per_layer_token_embd.scaled", BASALT_DTYPE_F32, {P, L, T}, {tok},
                 {{op::scale::factor, std::sqrt(static_cast<float>(P))}});
    int32_t proj = c.g.op(BASALT_OP_MATMUL, "per_layer_model_proj", BASALT_DTYPE_F32, {P * L, T},
                          {c.weight("per_layer_model_proj.weight", {E, P * L}), x});
    proj = c.g.op(BASALT_OP_COPY, "per_layer_model_proj.layers", BASALT_DTYPE_F32, {P, L, T}, {proj});
    proj = c.g.op(BASALT_OP_SCALE, "per_layer_model_proj.scaled", BASALT_DTYPE_F32, {P, L, T}, {proj},
                  {{op::scale::factor, 1.0f / std::sqrt(static_cast<float>(E))}});
    proj = rms_norm(c, proj, "per_layer_proj_norm.weight", "per_layer_proj_norm");
    int32_t sum = c.g.op(BASALT_OP_ADD, "per_layer_inputs.sum", BASALT_DTYPE_F32, {P, L, T}, {proj, tok});
    sum = c.g.op(BASALT_OP_SCALE, "per_layer_inputs.scaled", BASALT_DTYPE_F32, {P, L, T}, {sum},
                 {{op::scale::factor, 1.0f / std::sqrt(2.0f)}});
    return c.g.op(BASALT_OP_COPY, "per_layer_inputs", BASALT_DTYPE_F32, {P * L, T}, {sum});
}

// Layer il's per-layer embedding added to x [n_embd, T]: x + post_norm(proj(GELU(inp_gate(x)) * its input)).
int32_t add_per_layer_embedding(ForwardContext& c, uint32_t il, int32_t x, int32_t inputs) {
    const auto& hp = c.hp;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t T = c.n_tokens, E = hp.n_embd, P = hp.n_embd_per_layer;
    int32_t gate = project(c, x, p + "inp_gate.weight", P, p + "inp_gate");
    gate = c.g.op(BASALT_OP_GELU, p + "inp_gate.act", BASALT_DTYPE_F32, {P, T}, {gate});
    const int32_t mine = c.g.op(BASALT_OP_SLICE, p + "per_layer_input", BASALT_DTYPE_F32, {P, T}, {inputs},
                                {{op::slice::offset, static_cast<int32_t>(il * P)}});
    gate = c.g.op(BASALT_OP_MUL, p + "per_layer_gated", BASALT_DTYPE_F32, {P, T}, {gate, mine});
    int32_t out = c.g.op(BASALT_OP_MATMUL, p + "per_layer_proj", BASALT_DTYPE_F32, {E, T},
                         {c.weight(p + "proj.weight", {P, E}), gate});
    out = rms_norm(c, out, p + "post_norm.weight", p + "per_layer_post_norm");
    return c.g.op(BASALT_OP_ADD, p + "per_layer_residual", BASALT_DTYPE_F32, {E, T}, {x, out});
}

}  // namespace

void build_gemma4(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    if (c.stream_window != 0) {
        fail(BASALT_ERR_UNSUPPORTED,
             "{}: the streaming cache (KV policy 'sinks') re-rotates keys with one head size and rope for every layer; "
             "gemma4's layers differ in both",
             c.weights.source());
    }
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    x = c.g.op(BASALT_OP_SCALE, "token_embd.scaled", BASALT_DTYPE_F32, {hp.n_embd, T}, {x},
               {{op::scale::factor, std::sqrt(static_cast<float>(hp.n_embd))}});
    const int32_t inputs = hp.n_embd_per_layer != 0 ? per_layer_inputs(c, x) : -1;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int i = static_cast<int>(il);
        int32_t a = gemma4_attention(c, il, rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm"));
        a = rms_norm(c, a, p + "post_attention_norm.weight", p + "post_attention_norm");
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        int32_t f = gemma4_ffn(c, il, rms_norm(c, x, p + "ffn_norm.weight", p + "ffn_norm"));
        f = rms_norm(c, f, p + "post_ffw_norm.weight", p + "post_ffw_norm");
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
        if (inputs >= 0) x = add_per_layer_embedding(c, il, x, inputs);
        if (il < hp.layer_out_scale.size()) {
            x = c.g.op(BASALT_OP_SCALE, p + "out_scaled", BASALT_DTYPE_F32, {hp.n_embd, T}, {x},
                       {{op::scale::factor, hp.layer_out_scale[il]}});
        }
        x = steer_hook(c, i, x);
    }
    if (c.n_outputs == 0) return;
    output_head(c, rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm"));
}

}  // namespace basalt
