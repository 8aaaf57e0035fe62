// smollm3: llama with no rope on every 4th layer (llama.cpp fixes the step at 4: no GGUF key carries it).
#include "graph/arch.hpp"

namespace basalt {

void build_smollm3(ForwardContext& c) {
    LlamaVariant v;
    v.no_rope_step = 4;
    build_llama_family(c, v);
}

}  // namespace basalt
