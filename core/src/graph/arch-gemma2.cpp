// gemma2: the gemma family without q/k norms, the same rope base on every layer, attention-logit and final-logit
// soft-caps (hp.attn_soft_cap, hp.final_soft_cap), and llama.cpp's query scale.
#include <cmath>

#include "graph/arch.hpp"

namespace basalt {

void build_gemma2(ForwardContext& c) {
    GemmaVariant v;
    // llama.cpp scales the 27B checkpoint (46 layers) by query_pre_attn_scalar = n_embd / n_head, the others by
    // head_dim; it decides by the layer count, as this does.
    constexpr uint32_t kLayers27B = 46;
    if (c.hp.n_layer == kLayers27B) v.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.hp.n_embd / c.hp.n_head));
    build_gemma_family(c, v);
}

}  // namespace basalt
