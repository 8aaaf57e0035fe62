// sampler-logit-bias ("logit_bias"): adds a fixed value to the logits of chosen tokens. Parameter "bias" is a
// comma-separated list of id:value entries, e.g. "15:+2.5,42:-1,7:-inf" (-inf bans a token; an id given twice
// gets the sum). Ids absent from the candidates are ignored. Stateless: accept/reset NULL, host-default clone.
#include <basalt/sdk/sampler-plugin.hpp>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <unordered_map>

namespace {

constexpr basalt::sdk::sampler_spec kLogitBias = {
    "logit_bias",
    "adds fixed biases to chosen tokens' logits",
    BASALT_SAMPLER_DRAFT_SAFE,
};

// Parses "id:value,id:value"; throws naming the parameter, the whole value and the bad entry.
std::unordered_map<int32_t, float> parse_bias(const basalt::sdk::params& p) {
    std::unordered_map<int32_t, float> out;
    const auto v = p.find("bias");
    if (!v) return out;
    const std::string all(*v);
    size_t start = 0;
    while (start <= all.size() && !all.empty()) {
        size_t end = all.find(',', start);
        if (end == std::string::npos) end = all.size();
        const std::string entry = all.substr(start, end - start);
        const std::string expected = "a list of id:value entries (bad entry '" + entry + "')";
        const size_t colon = entry.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) p.bad("bias", all, expected.c_str());
        int32_t id = -1;
        auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + colon, id);
        if (ec != std::errc() || ptr != entry.data() + colon || id < 0) p.bad("bias", all, expected.c_str());
        const std::string val = entry.substr(colon + 1);
        char* vend = nullptr;
        const float f = std::strtof(val.c_str(), &vend);
        const bool ok = vend == val.c_str() + val.size() && !std::isnan(f) && (std::isfinite(f) || f < 0);
        if (!ok) p.bad("bias", all, expected.c_str());
        out[id] += f;
        start = end + 1;
        if (end == all.size()) break;
    }
    return out;
}

struct LogitBias {
    std::unordered_map<int32_t, float> bias;

    explicit LogitBias(const basalt::sdk::params& p) {
        p.expect_only({"bias"});
        bias = parse_bias(p);
    }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        if (bias.empty()) return;
        bool changed = false;
        for (size_t i = 0; i < c.size; ++i) {
            auto it = bias.find(c.data[i].id);
            if (it == bias.end()) continue;
            c.data[i].logit += it->second;
            changed = true;
        }
        if (changed) {
            c.sorted = 0;
            c.probs_valid = 0;
        }
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-logit-bias", basalt::sdk::sampler<LogitBias, kLogitBias>)
