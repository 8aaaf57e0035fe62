#include "support/params.hpp"

#include "support/error.hpp"

namespace basalt {

ParamPairs to_pairs(const basalt_params* p, const char* what) {
    ParamPairs out;
    if (p == nullptr) return out;
    if (p->struct_size < offsetof(basalt_params, values) + sizeof(p->values)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "{} basalt_params.struct_size {} is too small", what, p->struct_size);
    }
    for (size_t i = 0; i < p->count; ++i) {
        if (p->keys == nullptr || p->values == nullptr || p->keys[i] == nullptr || p->values[i] == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "{} parameter #{} has a NULL key or value", what, i);
        }
        out.emplace_back(p->keys[i], p->values[i]);
    }
    return out;
}

}  // namespace basalt
