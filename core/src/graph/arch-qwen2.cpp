// qwen2: llama's layout with q/k/v biases and rope on halves (neox).
#include "graph/arch.hpp"

namespace basalt {

void build_qwen2(ForwardContext& c) {
    LlamaVariant v;
    v.rope_mode = 1;
    v.qkv_bias = true;
    build_llama_family(c, v);
}

}  // namespace basalt
