#include "request-spec.hpp"

namespace basalt::cli {

basalt_request_params RequestSpec::params(basalt_request_callback callback, void* user_data) {
    basalt_request_params rp{};
    rp.struct_size = sizeof(rp);
    rp.n_top_logprobs = n_top_logprobs;
    rp.flags = flags;
    if (has_tokens) {
        rp.tokens = tokens.data();
        rp.n_tokens = tokens.size();
    } else if (!prompt.empty() || (!has_source && !has_source_tokens)) {
        rp.prompt = prompt.data();
        rp.prompt_len = prompt.size();
    }
    if (has_source_tokens) {
        rp.source_tokens = source_tokens.data();
        rp.n_source_tokens = source_tokens.size();
    } else if (has_source) {
        rp.source = source.c_str();
    }
    rp.samplers = samplers.c_str();
    rp.decoder = decoder.empty() ? nullptr : decoder.c_str();
    rp.max_tokens = max_tokens;
    rp.seed = seed;
    rp.cache_salt = cache_salt.empty() ? nullptr : cache_salt.c_str();
    stop_ptrs_.clear();
    for (const auto& s : stop) stop_ptrs_.push_back(s.c_str());
    rp.stop = stop_ptrs_.data();
    rp.n_stop = stop_ptrs_.size();
    rp.stop_tokens = stop_tokens.empty() ? nullptr : stop_tokens.data();
    rp.n_stop_tokens = stop_tokens.size();
    steer_ptrs_.clear();
    for (const auto& v : steer) steer_ptrs_.push_back(v.c_str());
    rp.steer = steer_ptrs_.data();
    rp.n_steer = steer_ptrs_.size();
    rp.callback = callback;
    rp.user_data = user_data;
    return rp;
}

std::string read_string_or_list(const nlohmann::ordered_json& v, const char* name, const char* what,
                                std::vector<std::string>& out) {
    const std::string why = std::string("'") + name + "' must be " + what;
    if (v.is_string()) {
        out.push_back(v.get<std::string>());
        return {};
    }
    if (!v.is_array()) return why;
    for (const auto& e : v) {
        if (!e.is_string()) return why;
        out.push_back(e.get<std::string>());
    }
    return {};
}

}  // namespace basalt::cli
