// Key/value parameters between the C ABI's basalt_params and owned string pairs.
#pragma once

#include <basalt/common.h>

#include <string>
#include <utility>
#include <vector>

namespace basalt {

using ParamPairs = std::vector<std::pair<std::string, std::string>>;

// Owned key/value strings viewed as basalt_params for a create call; the view borrows `kv`, which must outlive it.
struct ParamsView {
    std::vector<const char*> keys, values;
    basalt_params params{};
    explicit ParamsView(const ParamPairs& kv) {
        for (const auto& [k, v] : kv) {
            keys.push_back(k.c_str());
            values.push_back(v.c_str());
        }
        params.struct_size = sizeof(params);
        params.count = keys.size();
        params.keys = keys.data();
        params.values = values.data();
    }
};

// Copies a caller's basalt_params (NULL: none) into owned pairs; throws Error naming `what` for a struct too small
// or a NULL key/value.
ParamPairs to_pairs(const basalt_params* p, const char* what);

}  // namespace basalt
