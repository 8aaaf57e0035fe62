// llama with experts (Mixtral-style): the llama block with a routed mixture-of-experts FFN (softmax over all
// experts, top-k, renormalised weights; see ffn_moe in arch-common.cpp).
#include "graph/arch.hpp"

namespace basalt {

void build_moe(ForwardContext& c) {
    LlamaVariant v;
    v.experts = true;
    build_llama_family(c, v);
}

}  // namespace basalt
