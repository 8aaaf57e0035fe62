// qwen3 and qwen3moe: llama's layout with rope on halves (neox), no biases, and an RMS norm of q and k per head
// before rope; qwen3moe routes its FFN through experts (softmax, top-k, weights renormalised to sum 1).
#include "graph/arch.hpp"

namespace basalt {

void build_qwen3(ForwardContext& c) {
    LlamaVariant v;
    v.rope_mode = 1;
    v.qk_norm = true;
    build_llama_family(c, v);
}

void build_qwen3moe(ForwardContext& c) {
    LlamaVariant v;
    v.rope_mode = 1;
    v.qk_norm = true;
    v.experts = true;
    build_llama_family(c, v);
}

}  // namespace basalt
