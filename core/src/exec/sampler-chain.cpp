// Parser of the sampler-chain syntax (see sampler-chain.hpp and docs/samplers.md).
#include "exec/sampler-chain.hpp"

#include <algorithm>
#include <cstdlib>

#include "support/error.hpp"

namespace basalt {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t start = 0;
    while (true) {
        const size_t end = s.find(sep, start);
        out.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    return out;
}

bool name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
           ch == '+' || ch == '-';
}

[[noreturn]] void syntax(const std::string& what, std::string_view text) {
    throw Error(BASALT_ERR_FORMAT, "bad sampler chain: " + what + " in '" + std::string(text) + "'");
}

// A parameter given twice ("top_k:k=3,k=5", or a bare value and its key) is refused rather than one silently winning.
void refuse_duplicate_keys(const SamplerSpec& spec, std::string_view text) {
    for (size_t i = 0; i < spec.params.size(); ++i) {
        for (size_t k = 0; k < i; ++k) {
            if (spec.params[k].first == spec.params[i].first)
                syntax("the parameter '" + spec.params[i].first + "' of '" + spec.name + "' is given twice", text);
        }
    }
}

}  // namespace

std::string primary_key(std::string_view sampler) {
    if (sampler == "temp") return "t";
    if (sampler == "top_k") return "k";
    if (sampler == "top_p" || sampler == "min_p" || sampler == "typical") return "p";
    if (sampler == "dist") return "seed";
    if (sampler == "logit_bias") return "bias";
    if (sampler == "penalties") return "repeat";
    if (sampler == "no_repeat_ngram") return "n";
    return "value";
}

std::vector<SamplerSpec> parse_sampler_chain(std::string_view text) {
    std::vector<SamplerSpec> chain;
    if (trim(text).empty()) syntax("no samplers", text);
    auto entries = split(text, ';');
    if (entries.size() > 1 && trim(entries.back()).empty()) entries.pop_back();  // one trailing ';' is fine
    for (std::string_view raw : entries) {
        const std::string_view entry = trim(raw);
        if (entry.empty()) syntax("an empty entry", text);
        const size_t colon = entry.find(':');
        SamplerSpec spec;
        const std::string_view name = trim(entry.substr(0, colon));
        if (name.empty()) syntax("a missing sampler name", entry);
        for (char ch : name) {
            if (!name_char(ch)) syntax("the sampler name '" + std::string(name) + "' has a bad character", entry);
        }
        spec.name = std::string(name);
        if (colon != std::string_view::npos) {
            const std::string_view rest = entry.substr(colon + 1);
            bool bare_seen = false;
            // logit_bias's value is itself "id:value,id:value": everything after the name is the bias list
            // unless it is written key=value.
            if (spec.name == "logit_bias" && rest.find('=') == std::string_view::npos) {
                if (trim(rest).empty()) syntax("an empty parameter", entry);
                spec.params.emplace_back("bias", std::string(trim(rest)));
                chain.push_back(std::move(spec));
                continue;
            }
            if (spec.name == "logit_bias") {
                const std::string_view kv = trim(rest);
                const size_t eq = kv.find('=');
                spec.params.emplace_back(std::string(trim(kv.substr(0, eq))), std::string(trim(kv.substr(eq + 1))));
                chain.push_back(std::move(spec));
                continue;
            }
            for (std::string_view rawp : split(rest, ',')) {
                const std::string_view param = trim(rawp);
                if (param.empty()) syntax("an empty parameter", entry);
                const size_t eq = param.find('=');
                if (eq == std::string_view::npos) {
                    if (bare_seen) syntax("a second value without a key ('" + std::string(param) + "')", entry);
                    bare_seen = true;
                    spec.params.emplace_back(primary_key(spec.name), std::string(param));
                    continue;
                }
                const std::string_view key = trim(param.substr(0, eq));
                const std::string_view value = trim(param.substr(eq + 1));
                if (key.empty()) syntax("a parameter without a key ('" + std::string(param) + "')", entry);
                if (value.empty()) syntax("the parameter '" + std::string(key) + "' has no value", entry);
                spec.params.emplace_back(std::string(key), std::string(value));
            }
        }
        chain.push_back(std::move(spec));
    }
    for (const SamplerSpec& spec : chain) refuse_duplicate_keys(spec, text);
    return chain;
}

namespace {

bool is_seed_key(const std::string& key) {
    return key == "seed" || key == primary_key("dist");
}

}  // namespace

void SamplerChainSpec::seed_dist(int64_t seed) {
    if (seed < 0) return;
    for (SamplerSpec& s : entries) {
        if (s.name != "dist") continue;
        const bool has =
            std::any_of(s.params.begin(), s.params.end(), [](const auto& kv) { return is_seed_key(kv.first); });
        if (!has) s.params.emplace_back("seed", std::to_string(seed));
    }
}

std::optional<int64_t> SamplerChainSpec::dist_seed() const {
    std::optional<int64_t> seed;
    for (const SamplerSpec& s : entries) {
        if (s.name != "dist") continue;
        for (const auto& [key, value] : s.params) {
            if (is_seed_key(key)) seed = std::atoll(value.c_str());
        }
    }
    return seed;
}

std::vector<long long> SamplerChainSpec::logit_bias_tokens() const {
    std::vector<long long> ids;
    for (const SamplerSpec& s : entries) {
        if (s.name != "logit_bias") continue;
        for (const auto& [key, value] : s.params) {
            if (key != "bias" && key != primary_key("logit_bias")) continue;
            size_t at = 0;
            while (at < value.size()) {
                const size_t end = std::min(value.find(',', at), value.size());
                ids.push_back(std::atoll(value.substr(at, end - at).c_str()));
                at = end + 1;
            }
        }
    }
    return ids;
}

SamplerSpec parse_component_spec(std::string_view text, std::string_view what, std::string_view kind) {
    const auto bad = [&](const std::string& why) {
        return Error(BASALT_ERR_FORMAT, "bad " + std::string(what) + " '" + std::string(text) + "': " + why);
    };
    std::vector<SamplerSpec> entries;
    try {
        entries = parse_sampler_chain(text);
    } catch (const Error& e) {
        // The shared syntax's message, without the sampler-chain prefix: this text is not a sampler chain.
        static constexpr std::string_view kPrefix = "bad sampler chain: ";
        std::string why = e.what();
        if (why.compare(0, kPrefix.size(), kPrefix) == 0) why.erase(0, kPrefix.size());
        const std::string whole = " in '" + std::string(text) + "'";  // said once, at the front
        if (why.size() > whole.size() && why.compare(why.size() - whole.size(), whole.size(), whole) == 0)
            why.resize(why.size() - whole.size());
        throw bad(why);
    }
    if (entries.size() != 1)
        throw bad("names " + std::to_string(entries.size()) + " " + std::string(kind) +
                  "; give one NAME[:key=value,...]");
    // A bare value is a sampler's shorthand for its main parameter; a component has none, so it would reach the
    // component under a key nobody typed ("value").
    const size_t colon = text.find(':');
    if (colon != std::string_view::npos) {
        for (std::string_view param : split(text.substr(colon + 1), ',')) {
            param = trim(param);
            if (!param.empty() && param.find('=') == std::string_view::npos)
                throw bad("the value '" + std::string(param) + "' has no key: write key=value");
        }
    }
    return std::move(entries[0]);
}

}  // namespace basalt
