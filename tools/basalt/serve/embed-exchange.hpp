// An embedding exchange of `basalt serve` (embeddings.cpp): inputs submitted together as engine embedding requests,
// answered once the last has finished. /v1/embeddings and /v1/rerank (rerank.cpp) build on it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server.hpp"

namespace basalt::serve {

// The input of one embedding: text, or token ids.
struct EmbedInput {
    std::string text;
    std::vector<int32_t> tokens;
    bool is_tokens = false;
};

// Builds the 200 answer from every input's result (in order) and the input tokens they counted.
using EmbedRespond = std::function<json(std::vector<std::vector<float>>& results, uint64_t tokens)>;

// Reserves a slot per input (429 when the queue is full), submits each as an embedding request (BASALT_POOLING_*
// pooling, dimensions) and answers on session s: respond's JSON, or 400 naming the first input the engine refused
// (and why), or 500 naming one that failed. Called on the session's strand.
void submit_embeddings(Server& server, const std::shared_ptr<HttpSession>& s, const std::string& endpoint,
                       std::vector<EmbedInput> inputs, int32_t pooling, uint32_t dimensions, EmbedRespond respond);

}  // namespace basalt::serve
