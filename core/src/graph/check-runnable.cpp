// Whether a model can run, decided without a backend: the forward graph of a one-token batch is built against the
// file's tensors with nothing placed or allocated, so the builders' own lookups (every tensor they need, its shape)
// are the list of what is required.
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

// A file that asks for math no builder implements (an unknown rope scaling, frequency factors or soft-caps the
// architecture's graph does not apply, ...) is refused naming the key, never run without it.
void refuse_unimplemented(const gguf::File& file, const ModelHparams& hp) {
    if (!hp.unimplemented.empty()) fail(BASALT_ERR_UNSUPPORTED, "{}: {}", file.source(), hp.unimplemented);
}

}  // namespace

void check_runnable(const gguf::File& file, const ModelHparams& hp) {
    refuse_unimplemented(file, hp);
    GraphBuilder g;
    const ModelWeights weights(file, nullptr, 0);
    ForwardContext c{g, hp, weights};
    c.n_tokens = 1;
    c.n_outputs = 1;
    c.tokens = g.tensor(BASALT_DTYPE_I32, {1}, "inp_tokens");
    c.positions = g.tensor(BASALT_DTYPE_I32, {1}, "inp_positions");
    c.kv_slots = g.tensor(BASALT_DTYPE_I32, {1}, "inp_kv_slots");
    c.attn_query = g.tensor(BASALT_DTYPE_I32, {2, 1}, "inp_attn_query");
    c.attn_lists = g.tensor(BASALT_DTYPE_I32, {2, 1}, "inp_attn_lists");
    c.out_rows = g.tensor(BASALT_DTYPE_I32, {1}, "inp_out_rows");
    c.logits = g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.n_vocab), 1}, "logits");
    const uint32_t cache_layers = hp.encoder_decoder ? hp.n_layer_dec : hp.n_layer;
    for (uint32_t il = 0; il < cache_layers; ++il) {
        c.k_cache.push_back(g.tensor(BASALT_DTYPE_F32, {std::max<int64_t>(1, hp.n_embd_k_gqa(il)), 1}, "cache_k"));
        c.v_cache.push_back(g.tensor(BASALT_DTYPE_F32, {std::max<int64_t>(1, hp.n_embd_v_gqa(il)), 1}, "cache_v"));
    }
    if (hp.recurrent()) {
        c.state_rows = g.tensor(BASALT_DTYPE_I32, {2, 1}, "inp_state_rows");
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            const bool r = hp.layer_recurrent[il];
            c.conv_state.push_back(
                r ? g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.conv_state_floats()), 1}, "state_conv") : -1);
            c.delta_state.push_back(
                r ? g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.delta_state_floats()), 1}, "state_delta") : -1);
        }
    }
    if (hp.encoder_decoder) {
        // Both passes: the encoder's (its cross K/V writes) and the decoder's.
        c.rel_index = g.tensor(BASALT_DTYPE_I32, {2 * static_cast<int64_t>(hp.rel_max_distance) + 1}, "inp_rel_index");
        c.cross_slots = g.tensor(BASALT_DTYPE_I32, {1}, "inp_cross_slots");
        c.cross_lists = g.tensor(BASALT_DTYPE_I32, {2, 1}, "inp_cross_lists");
        for (uint32_t il = 0; il < hp.n_layer_dec; ++il) {
            c.cross_k.push_back(g.tensor(BASALT_DTYPE_F32, {std::max<int64_t>(1, hp.n_embd_k_gqa()), 1}, "cross_k"));
            c.cross_v.push_back(g.tensor(BASALT_DTYPE_F32, {std::max<int64_t>(1, hp.n_embd_v_gqa()), 1}, "cross_v"));
        }
        c.encoder_pass = true;
        build_forward(c);
        c.encoder_pass = false;
    }
    if (hp.encoder_only) {
        // One embedding pass: hidden rows out, and the rank head's tensors when the file has one.
        c.encoder_pass = true;
        c.embd_out = g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.n_embd), 1}, "embd");
        if (hp.n_cls_out > 0) {
            c.pool_rows = g.tensor(BASALT_DTYPE_I32, {1}, "inp_pool_rows");
            c.rank_out = g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.n_cls_out), 1}, "rank_scores");
        }
    }
    build_forward(c);
}

}  // namespace basalt
