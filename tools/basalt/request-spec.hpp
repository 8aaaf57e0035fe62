// One engine request as the CLI front ends build it (basalt batch, basalt serve, basalt chat): the strings and arrays
// a basalt_request_params points into, owned in one place, and the JSON readers the request formats share.
#pragma once

#include <basalt/basalt.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace basalt::cli {

// Owned storage behind a basalt_request_params. Not thread-safe; params() pointers stay valid while *this lives
// and is not modified.
struct RequestSpec {
    std::string prompt;
    std::vector<int32_t> tokens;
    bool has_tokens = false;
    uint32_t flags = 0;  // BASALT_REQUEST_*
    int32_t max_tokens = 64;
    std::string samplers = "greedy";
    std::string decoder;  // "" : the engine's default ("sample")
    std::vector<std::string> stop;
    std::vector<int32_t> stop_tokens;
    int64_t seed = -1;
    std::string cache_salt;
    std::vector<std::string> steer;
    std::string source;  // encoder-decoder models: the encoder's input (text or ids)
    std::vector<int32_t> source_tokens;
    bool has_source = false, has_source_tokens = false;
    int32_t n_top_logprobs = 0;  // with BASALT_REQUEST_LOGPROBS in flags: alternatives per token (0..20)

    // Request parameters pointing into *this (callback and user_data as given). Caller owns nothing new.
    basalt_request_params params(basalt_request_callback callback = nullptr, void* user_data = nullptr);

  private:
    std::vector<const char*> stop_ptrs_, steer_ptrs_;
};

// Reads a JSON value that is a string or an array of strings into out (appended). Returns "" or the reason,
// "'NAME' must be WHAT" naming the field. Pure function.
std::string read_string_or_list(const nlohmann::ordered_json& v, const char* name, const char* what,
                                std::vector<std::string>& out);

}  // namespace basalt::cli
