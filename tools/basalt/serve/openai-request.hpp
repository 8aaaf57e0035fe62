// The OpenAI request bodies of /v1/completions and /v1/chat/completions: checked field by field into engine
// requests (the sampler chain built from temperature, top_p, penalties ... or taken from the `samplers` extension),
// and the OpenAI-style error object for everything refused. docs/server.md, "Parameters".
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../request-spec.hpp"
#include "chat-template.hpp"
#include "reasoning.hpp"
#include "tool-request.hpp"

namespace basalt::serve {

using json = nlohmann::ordered_json;

// An error answered to the client: HTTP status and the fields of OpenAI's {"error": {...}} object.
struct ApiError : std::runtime_error {
    int status;
    std::string type, param, code;
    ApiError(int status_, const std::string& message, std::string param_ = {},
             std::string type_ = "invalid_request_error", std::string code_ = {})
        : std::runtime_error(message),
          status(status_),
          type(std::move(type_)),
          param(std::move(param_)),
          code(std::move(code_)) {}
};

// {"error": {"message", "type", "param", "code"}} (param and code null when empty). Pure function.
json error_object(const ApiError& e);

// What parsing needs to know about the served model.
struct ServedModel {
    std::string id;                         // the name clients pass as "model"
    uint32_t n_vocab = 0;                   // token ids and logit_bias keys must be below it
    uint32_t n_ctx = 0;                     // each request's context
    ChatTemplate chat;                      // the chat template in use
    std::vector<int32_t> chat_stop_tokens;  // the template's end-of-turn token, when it is one token
    // Cache sequences a decoder spec needs per request (throws std::exception naming a bad spec); empty: unchecked.
    // Called from HTTP threads: must be thread-safe.
    std::function<uint32_t(const std::string&)> decoder_seqs;
    uint32_t max_request_seqs = 1;  // --max-request-seqs: decoders needing more sequences are refused
    std::string draft_adaptive;     // --draft-adaptive (on, off, "": as the request gives): speculative specs
    // Chat message content is tokenized with special tokens parsed (serve --trust-client-special-tokens).
    bool trust_client_special_tokens = false;
    std::vector<std::string> control_vectors;  // names of the vectors loaded at start ("steer" names them), sorted
    ReasoningMarkers reasoning;                // the chat template family's reasoning markers (reasoning_markers_for)
    // Chat replies' reasoning goes to reasoning_content (serve --reasoning-format; a request's reasoning_format
    // overrides it).
    bool split_reasoning = true;
    ToolSupport tools;  // what the chat template does with tools (tool-request.hpp)
};

// A request's "steer" entry "NAME[:SCALE[:A-B]]" checked against the loaded vectors and rebuilt for the engine;
// throws ApiError 400 (naming the loaded vectors, never a path) for an unknown name or a bad scale or range.
std::string steer_spec(const std::string& text, const ServedModel& model);

// One parsed request: n choices for each prompt, all with the same engine parameters.
struct GenerationRequest {
    bool chat = false;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    int n = 1;
    int logprobs = -1;  // -1: no log-probabilities; else each token's and this many alternatives (0..20)
    std::vector<cli::RequestSpec> prompts;  // one per prompt (completions may send several); engine params set
    std::string user;
    // Chat: the rendered messages, tokenized with content as text (tokenize_chat) in place of prompts' text; empty
    // for completions and for a server that trusts its clients' special tokens.
    std::vector<ChatPiece> chat_pieces;
    // Chat: split each reply's reasoning into reasoning_content (reasoning.hpp) with these markers; reasoning_open:
    // the rendered prompt opened the reasoning block.
    bool split_reasoning = false;
    ReasoningMarkers reasoning;
    bool reasoning_open = false;
    // Chat: how replies are parsed into tool_calls (convention null: not parsed).
    ToolReplies tools;
};

// A text prompt (or rendered chat) of more bytes than this per context token is refused before it is tokenized:
// it could fit only if its tokens averaged more bytes than that, and tokenizing it costs time on an HTTP thread.
inline constexpr size_t kPromptBytesPerToken = 64;

// Parses a /v1/completions body. Throws ApiError (400, or 404 for another model) naming the field. Pure function.
GenerationRequest parse_completion(const json& body, const ServedModel& model);
// Parses a /v1/chat/completions body, rendering the messages with model.chat. Throws ApiError. Pure function.
GenerationRequest parse_chat(const json& body, const ServedModel& model);

// Parses an HTTP body as a JSON object; throws ApiError 400 for bad JSON (invalid UTF-8 included), nesting deeper
// than 64 levels, an object of more than 1024 keys (checked before parsing) or another type.
json parse_body(const std::string& body);

}  // namespace basalt::serve
