// Server-Sent Events framing of streamed completions: "data: JSON\n\n" events and the closing "data: [DONE]".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace basalt::serve {

// One SSE event carrying a JSON object (invalid UTF-8 replaced, never thrown). Pure function.
inline std::string sse_event(const nlohmann::ordered_json& j) {
    return "data: " + j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n\n";
}

// The event that ends an OpenAI stream. Pure function.
inline std::string sse_done() {
    return "data: [DONE]\n\n";
}

}  // namespace basalt::serve
