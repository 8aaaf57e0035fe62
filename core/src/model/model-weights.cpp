#include "model/model-weights.hpp"

#include "model/dtype.hpp"
#include "support/error.hpp"

namespace basalt {

ModelWeights::ModelWeights(const gguf::File& file, basalt_buffer* buffer, uint64_t base_offset)
    : source_(file.source()) {
    for (const auto& t : file.tensors()) {
        WeightRef w;
        w.name = t.name;
        w.type = t.type;
        w.ne.assign(t.ne, t.ne + t.n_dims);
        w.buffer = buffer;
        w.offset = base_offset + t.offset;
        by_name_.emplace(t.name, std::move(w));
    }
}

std::optional<WeightRef> ModelWeights::find(const std::string& name) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
}

WeightRef ModelWeights::require(const std::string& name, const std::string& arch) const {
    auto w = find(name);
    if (!w) fail(BASALT_ERR_FORMAT, "{}: tensor '{}' required by architecture {} is missing", source_, name, arch);
    return *w;
}

WeightRef ModelWeights::rows(const WeightRef& w, int64_t first, int64_t count) {
    if (w.ne.empty() || first < 0 || count < 0) fail(BASALT_ERR_INTERNAL, "bad row slice of '{}'", w.name);
    WeightRef r = w;
    if (w.ne.size() == 1) {
        // a vector: slice elements instead of rows
        const auto elem = dtype_bytes(w.type, static_cast<uint64_t>(first));
        if (first + count > w.ne[0] || !elem) {
            fail(BASALT_ERR_FORMAT, "tensor '{}' has {} elements, {} needed", w.name, w.ne[0], first + count);
        }
        r.ne = {count};
        r.offset += *elem;
        return r;
    }
    if (first + count > w.ne[1])
        fail(BASALT_ERR_FORMAT, "tensor '{}' has {} rows, {} needed", w.name, w.ne[1], first + count);
    const auto row_bytes = dtype_bytes(w.type, static_cast<uint64_t>(w.ne[0]));
    r.ne[1] = count;
    r.offset += *row_bytes * static_cast<uint64_t>(first);
    return r;
}

void ModelWeights::expect_shape(const WeightRef& w, std::initializer_list<int64_t> ne, const std::string& source) {
    const std::vector<int64_t> want(ne);
    if (w.ne != want) {
        auto show = [](const std::vector<int64_t>& v) {
            std::string s = "[";
            for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
            return s + "]";
        };
        fail(BASALT_ERR_FORMAT, "{}: tensor '{}' has shape {}, expected {}", source, w.name, show(w.ne), show(want));
    }
}

}  // namespace basalt
