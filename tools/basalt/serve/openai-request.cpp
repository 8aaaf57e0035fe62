#include "openai-request.hpp"

#include "../json-limits.hpp"
#include "../request-spec.hpp"
#include "structured-output.hpp"
#include "tool-request.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace basalt::serve {
namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
    throw ApiError(400, message, param);
}

bool present(const json& body, const char* key) {
    return body.contains(key) && !body[key].is_null();
}

double number_in(const json& body, const char* key, double lo, double hi) {
    const json& v = body[key];
    if (!v.is_number()) bad(key, std::string("'") + key + "' must be a number, not " + cli::value_excerpt(v));
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) {
        std::ostringstream os;
        os << "'" << key << "' must lie in [" << lo << ", " << hi << "], not " << cli::value_excerpt(v);
        bad(key, os.str());
    }
    return d;
}

int64_t integer_in(const json& body, const char* key, int64_t lo, int64_t hi) {
    const json& v = body[key];
    if (!v.is_number_integer()) bad(key, std::string("'") + key + "' must be an integer, not " + cli::value_excerpt(v));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        bad(key, std::string("'") + key + "' is out of range: " + cli::value_excerpt(v));
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi)
        bad(key, std::string("'") + key + "' must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], not " + cli::value_excerpt(v));
    return i;
}

bool boolean(const json& body, const char* key) {
    const json& v = body[key];
    if (!v.is_boolean()) bad(key, std::string("'") + key + "' must be true or false, not " + cli::value_excerpt(v));
    return v.get<bool>();
}

std::string string_field(const json& body, const char* key) {
    const json& v = body[key];
    if (!v.is_string()) bad(key, std::string("'") + key + "' must be a string, not " + cli::value_excerpt(v));
    return v.get<std::string>();
}

std::string fmt(double d) {
    std::ostringstream os;
    os.precision(9);
    os << d;
    return os.str();
}

constexpr size_t kMaxSteer = 16;  // "steer" entries of one request

const std::set<std::string>& common_keys() {
    static const std::set<std::string> k = {
        "model", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop", "presence_penalty",
        "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "seed", "user",
        // extensions
        "top_k", "min_p", "samplers", "decoder", "steer", "cache_salt", "ignore_eos"};
    return k;
}

// Fills everything but the prompt: sampler chain, decoder, stops, seed, extensions, n, stream.
void common(const json& body, const ServedModel& model, GenerationRequest& g, cli::RequestSpec& spec,
            const std::set<std::string>& own_keys, int64_t default_max_tokens) {
    for (const auto& [key, value] : body.items()) {
        if (common_keys().count(key) == 0 && own_keys.count(key) == 0 && structured_output_keys().count(key) == 0)
            bad(key,
                "unknown field '" + cli::excerpt(key) + "' (docs/server.md lists the parameters this server takes)");
    }
    if (present(body, "model")) {
        const std::string m = string_field(body, "model");
        if (m != model.id)
            throw ApiError(404,
                           "the model '" + cli::excerpt(m) + "' does not exist; this server serves '" + model.id + "'",
                           "model", "invalid_request_error", "model_not_found");
    }
    if (present(body, "n")) g.n = static_cast<int>(integer_in(body, "n", 1, 16));
    if (present(body, "stream")) g.stream = boolean(body, "stream");
    if (present(body, "stream_options")) {
        const json& so = body["stream_options"];
        if (!so.is_object()) bad("stream_options", "'stream_options' must be an object");
        for (const auto& [key, value] : so.items()) {
            if (key != "include_usage")
                bad("stream_options", "unknown field 'stream_options." + cli::excerpt(key) + "'");
            if (!value.is_boolean()) bad("stream_options", "'stream_options.include_usage' must be true or false");
            g.include_usage = value.get<bool>();
        }
        if (!g.stream) bad("stream_options", "'stream_options' is only allowed with 'stream': true");
    }
    if (present(body, "user")) g.user = string_field(body, "user");
    // Log-probabilities. Chat: logprobs true/false and top_logprobs 0..20 (only with logprobs). Completions (legacy):
    // logprobs N, the alternatives per token (0..20; OpenAI allows up to 5).
    if (g.chat) {
        const bool wanted = present(body, "logprobs") && boolean(body, "logprobs");
        if (present(body, "top_logprobs")) {
            const int64_t top = integer_in(body, "top_logprobs", 0, 20);
            if (!wanted) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
            g.logprobs = static_cast<int>(top);
        } else if (wanted) {
            g.logprobs = 0;
        }
    } else {
        if (present(body, "top_logprobs"))
            bad("top_logprobs", "'top_logprobs' is a chat completions field; /v1/completions takes 'logprobs': N");
        if (present(body, "logprobs")) g.logprobs = static_cast<int>(integer_in(body, "logprobs", 0, 20));
    }
    if (g.logprobs >= 0) {
        spec.flags |= BASALT_REQUEST_LOGPROBS;
        spec.n_top_logprobs = g.logprobs;
    }

    int64_t max_tokens = default_max_tokens;
    const char* max_key = present(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (present(body, max_key)) max_tokens = integer_in(body, max_key, 1, model.n_ctx);
    spec.max_tokens = static_cast<int32_t>(max_tokens);

    if (present(body, "stop")) {
        std::vector<std::string> stop;
        if (auto why = cli::read_string_or_list(body["stop"], "stop", "a string or an array of strings", stop);
            !why.empty())
            bad("stop", why);
        if (stop.size() > 16) bad("stop", "'stop' may hold at most 16 strings, not " + std::to_string(stop.size()));
        for (const auto& s : stop)
            if (s.empty()) bad("stop", "'stop' strings must not be empty");
        spec.stop.insert(spec.stop.end(), stop.begin(), stop.end());
    }
    if (present(body, "seed")) spec.seed = integer_in(body, "seed", 0, INT64_MAX);
    if (present(body, "decoder"))
        spec.decoder = cli::with_draft_adaptive(string_field(body, "decoder"), model.draft_adaptive);
    if (model.decoder_seqs) {  // the decoder's cache sequences (beams) within --max-request-seqs
        const std::string decoder = spec.decoder.empty() ? "sample" : spec.decoder;
        uint32_t n_seq = 0;
        try {
            n_seq = model.decoder_seqs(decoder);
        } catch (const std::exception& e) {
            bad("decoder", e.what());
        }
        if (n_seq > model.max_request_seqs)
            bad("decoder", "decoder '" + cli::excerpt(decoder) + "' needs " + std::to_string(n_seq) +
                               " cache sequences per request; this server allows " +
                               std::to_string(model.max_request_seqs) + " (--max-request-seqs " +
                               std::to_string(model.max_request_seqs) + ")");
    }
    if (g.logprobs >= 0 && !spec.decoder.empty() && spec.decoder != "sample" && spec.decoder.rfind("sample:", 0) != 0)
        throw ApiError(400,
                       "log-probabilities are reported for decoder 'sample' only (each token drawn from one logits "
                       "row), not for decoder '" +
                           spec.decoder + "'",
                       "logprobs", "invalid_request_error", "unsupported_parameter");
    if (present(body, "cache_salt")) spec.cache_salt = string_field(body, "cache_salt");
    if (present(body, "steer")) {
        std::vector<std::string> named;
        if (auto why = cli::read_string_or_list(body["steer"], "steer",
                                                "a string \"NAME[:SCALE[:A-B]]\" or an array of them", named);
            !why.empty())
            bad("steer", why);
        if (named.size() > kMaxSteer)
            bad("steer", "'steer' may name at most " + std::to_string(kMaxSteer) + " vectors, not " +
                             std::to_string(named.size()));
        for (const auto& n : named) spec.steer.push_back(steer_spec(n, model));
    }
    if (present(body, "ignore_eos") && boolean(body, "ignore_eos")) spec.flags |= BASALT_REQUEST_IGNORE_EOG;
    if (!g.chat) read_structured_output(body, false, spec);  // chat reads it with response_format

    // The sampler chain: `samplers` as given, or built from the OpenAI parameters.
    static const char* const kSampling[] = {
        "temperature", "top_p", "top_k", "min_p", "logit_bias", "presence_penalty", "frequency_penalty"};
    if (present(body, "samplers")) {
        for (const char* k : kSampling)
            if (present(body, k))
                bad(k, std::string("give either 'samplers' (a chain) or '") + k + "' and the other sampling fields");
        spec.samplers = string_field(body, "samplers");
        if (spec.samplers.empty()) bad("samplers", "'samplers' must not be empty");
        return;
    }
    std::vector<std::string> chain;
    if (present(body, "logit_bias")) {
        const json& lb = body["logit_bias"];
        if (!lb.is_object()) bad("logit_bias", "'logit_bias' must be an object mapping token ids to biases");
        std::string entry = "logit_bias:";
        bool first = true;
        std::map<long long, std::string> seen;  // token id -> the key that named it ("5" and "05" name one token)
        for (const auto& [key, value] : lb.items()) {
            char* end = nullptr;
            const long long id = std::strtoll(key.c_str(), &end, 10);
            if (key.empty() || key.size() > 12 || key.find_first_not_of("0123456789") != std::string::npos ||
                *end != '\0' || id < 0 || id >= static_cast<long long>(model.n_vocab))
                bad("logit_bias", "'logit_bias' keys must be token ids from 0 to " + std::to_string(model.n_vocab - 1) +
                                      ", not '" + cli::excerpt(key) + "'");
            if (auto [it, added] = seen.emplace(id, key); !added)
                bad("logit_bias", "'logit_bias' names token " + std::to_string(id) + " twice ('" +
                                      cli::excerpt(it->second) + "' and '" + cli::excerpt(key) + "')");
            if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100 ||
                value.get<double>() > 100)
                bad("logit_bias",
                    "'logit_bias' values must be numbers from -100 to 100, not " + cli::value_excerpt(value));
            entry += (first ? "" : ",") + std::to_string(id) + ":" + fmt(value.get<double>());
            first = false;
        }
        if (!first) chain.push_back(entry);
    }
    const double presence = present(body, "presence_penalty") ? number_in(body, "presence_penalty", -2, 2) : 0;
    const double frequency = present(body, "frequency_penalty") ? number_in(body, "frequency_penalty", -2, 2) : 0;
    if (presence != 0 || frequency != 0)
        chain.push_back("penalties:repeat=1,freq=" + fmt(frequency) + ",present=" + fmt(presence) +
                        ",last_n=" + std::to_string(model.n_ctx));
    const double temperature = present(body, "temperature") ? number_in(body, "temperature", 0, 2) : 1.0;
    const int64_t top_k = present(body, "top_k") ? integer_in(body, "top_k", 0, model.n_vocab) : 0;
    const double top_p = present(body, "top_p") ? number_in(body, "top_p", 0, 1) : 1.0;
    const double min_p = present(body, "min_p") ? number_in(body, "min_p", 0, 1) : 0.0;
    if (present(body, "top_p") && top_p == 0) bad("top_p", "'top_p' must be above 0");
    if (temperature == 0) {
        chain.emplace_back("greedy");
    } else {
        if (top_k > 0) chain.push_back("top_k:" + std::to_string(top_k));
        if (top_p < 1) chain.push_back("top_p:" + fmt(top_p));
        if (min_p > 0) chain.push_back("min_p:" + fmt(min_p));
        chain.push_back("temp:" + fmt(temperature));
        chain.emplace_back("dist");
    }
    spec.samplers.clear();
    for (size_t i = 0; i < chain.size(); ++i) spec.samplers += (i ? ";" : "") + chain[i];
}

// Refuses a text prompt too long to fit the context by its bytes alone, before anything tokenizes it.
void check_prompt_bytes(const GenerationRequest& g, const ServedModel& model, const char* param) {
    const size_t bound = kPromptBytesPerToken * static_cast<size_t>(model.n_ctx);
    for (const auto& p : g.prompts) {
        if (p.prompt.size() > bound)
            bad(param, std::string("'") + param + "' is " + std::to_string(p.prompt.size()) + " bytes; prompts over " +
                           std::to_string(kPromptBytesPerToken) + " bytes per context token (" + std::to_string(bound) +
                           " bytes) are refused before tokenizing");
    }
}

std::vector<int32_t> token_list(const json& v, const ServedModel& model, const char* param) {
    std::vector<int32_t> out;
    for (const auto& t : v) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= static_cast<int64_t>(model.n_vocab))
            bad(param, std::string("'") + param + "' token ids must be integers from 0 to " +
                           std::to_string(model.n_vocab - 1) + ", not " + cli::value_excerpt(t));
        out.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    if (out.empty()) bad(param, std::string("'") + param + "' must not be empty");
    return out;
}

}  // namespace

std::string steer_spec(const std::string& text, const ServedModel& model) {
    std::vector<std::string> parts;
    for (size_t at = 0;;) {
        const size_t colon = text.find(':', at);
        parts.push_back(text.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
        if (colon == std::string::npos) break;
        at = colon + 1;
    }
    const std::string& name = parts[0];
    if (std::find(model.control_vectors.begin(), model.control_vectors.end(), name) == model.control_vectors.end()) {
        std::string loaded;
        for (const auto& n : model.control_vectors) loaded += (loaded.empty() ? "" : ", ") + n;
        std::string shown = name.substr(0, 64);
        for (char& c : shown)
            if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
        bad("steer",
            "'steer' names no loaded control vector '" + shown + "' (loaded: " +
                (loaded.empty() ? "none; the operator loads them with --control-vector or --steer-dir" : loaded) + ")");
    }
    if (parts.size() > 3) bad("steer", "'steer' entries are \"NAME[:SCALE[:A-B]]\"");
    std::string out = name;
    if (parts.size() >= 2) {
        char* end = nullptr;
        const double scale = std::strtod(parts[1].c_str(), &end);
        if (parts[1].empty() || *end != '\0' || !std::isfinite(scale) || std::fabs(scale) > 1e6)
            bad("steer", "'steer' scale must be a finite number (|scale| <= 1e6) in \"NAME[:SCALE[:A-B]]\"");
        out += ":" + fmt(scale);
    }
    if (parts.size() == 3) {
        const std::string& r = parts[2];
        const size_t dash = r.find('-');
        const bool digits =
            !r.empty() && r.size() <= 12 && dash != std::string::npos && dash > 0 && dash + 1 < r.size() &&
            std::all_of(r.begin(), r.end(), [](char c) { return c == '-' || (c >= '0' && c <= '9'); }) &&
            r.find('-', dash + 1) == std::string::npos;
        if (!digits) bad("steer", "'steer' layers must be a range A-B of layer numbers in \"NAME[:SCALE[:A-B]]\"");
        out += ":" + r;
    }
    return out;
}

json error_object(const ApiError& e) {
    json inner = {{"message", e.what()}, {"type", e.type}};
    inner["param"] = e.param.empty() ? json(nullptr) : json(e.param);
    inner["code"] = e.code.empty() ? json(nullptr) : json(e.code);
    return json{{"error", inner}};
}

json parse_body(const std::string& body) {
    // Depth and key count first: nesting deeper than the bound would overflow the stack when a value is dumped or
    // destroyed, and each key of an ordered object costs a scan of the others.
    if (auto why = cli::check_json_limits(body); !why.empty()) throw ApiError(400, "the body is refused: " + why);
    json j;
    try {
        j = json::parse(body);
    } catch (const json::exception& e) {  // parse errors, and numbers that overflow a double (out_of_range)
        throw ApiError(400, "the body is not valid JSON: " + cli::excerpt(e.what(), 200));
    }
    if (!j.is_object()) throw ApiError(400, "the body must be a JSON object");
    return j;
}

GenerationRequest parse_completion(const json& body, const ServedModel& model) {
    static const std::set<std::string> own = {"prompt", "echo", "suffix", "best_of"};
    GenerationRequest g;
    cli::RequestSpec spec;
    common(body, model, g, spec, own, 16);
    if (present(body, "echo") && boolean(body, "echo"))
        throw ApiError(400, "'echo' is not supported by this server", "echo", "invalid_request_error",
                       "unsupported_parameter");
    if (present(body, "suffix") && !string_field(body, "suffix").empty())
        throw ApiError(400, "'suffix' (insertion) is not supported by this server", "suffix", "invalid_request_error",
                       "unsupported_parameter");
    if (present(body, "best_of") && integer_in(body, "best_of", 1, 16) != 1)
        throw ApiError(400, "'best_of' above 1 is not supported (use the beam decoder: \"decoder\": \"beam:width=4\")",
                       "best_of", "invalid_request_error", "unsupported_parameter");
    if (!present(body, "prompt")) bad("prompt", "'prompt' is required");
    const json& p = body["prompt"];
    auto add_text = [&](const std::string& text) {
        if (text.empty()) bad("prompt", "'prompt' must not be empty");
        cli::RequestSpec s = spec;
        s.prompt = text;
        g.prompts.push_back(std::move(s));
    };
    auto add_tokens = [&](std::vector<int32_t> ids) {
        cli::RequestSpec s = spec;
        s.tokens = std::move(ids);
        s.has_tokens = true;
        g.prompts.push_back(std::move(s));
    };
    if (p.is_string()) {
        add_text(p.get<std::string>());
    } else if (p.is_array() && !p.empty() && p[0].is_number()) {
        add_tokens(token_list(p, model, "prompt"));
    } else if (p.is_array() && !p.empty()) {
        for (const auto& e : p) {
            if (e.is_string())
                add_text(e.get<std::string>());
            else if (e.is_array())
                add_tokens(token_list(e, model, "prompt"));
            else
                bad("prompt",
                    "'prompt' must be a string, an array of strings, an array of token ids or an array of "
                    "such arrays");
        }
    } else {
        bad("prompt", "'prompt' must be a non-empty string, an array of strings, token ids or arrays of token ids");
    }
    if (g.prompts.size() * static_cast<size_t>(g.n) > 64)
        bad("prompt", "at most 64 choices (prompts x n) per request, not " +
                          std::to_string(g.prompts.size() * static_cast<size_t>(g.n)));
    check_prompt_bytes(g, model, "prompt");
    return g;
}

GenerationRequest parse_chat(const json& body, const ServedModel& model) {
    static const std::set<std::string> own = {"messages",      "max_completion_tokens", "response_format", "functions",
                                              "function_call", "chat_template_kwargs",  "reasoning_format"};
    GenerationRequest g;
    g.chat = true;
    cli::RequestSpec spec;
    std::set<std::string> keys = own;
    keys.insert(tool_request_keys().begin(), tool_request_keys().end());
    common(body, model, g, spec, keys, -1);
    const bool jinja = model.chat.jinja != nullptr;
    read_structured_output(body, true, spec);
    if (!present(body, "messages")) bad("messages", "'messages' is required");
    const json& ms = body["messages"];
    if (!ms.is_array() || ms.empty()) bad("messages", "'messages' must be a non-empty array of {role, content}");
    if (present(body, "chat_template_kwargs") && !body["chat_template_kwargs"].is_object())
        bad("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    json normalized = json::array();  // the messages in OpenAI shapes (what a Jinja template gets)
    for (size_t i = 0; i < ms.size(); ++i) {
        const json& m = ms[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) bad("messages", where + " must be an object with 'role' and 'content'");
        for (const auto& [key, value] : m.items()) {
            const bool openai = key == "tool_calls" || key == "tool_call_id" || key == "reasoning_content";
            if (key != "role" && key != "content" && key != "name" && !openai)
                bad("messages", where + ": unknown field '" + cli::excerpt(key) + "'");
        }
        const std::string role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
        if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
            bad("messages",
                where + ".role must be system, developer, user, assistant or tool, not '" + cli::excerpt(role) + "'");
        json n = m;
        if (role == "developer") n["role"] = "system";
        if (!m.contains("content") && !(role == "assistant" && m.contains("tool_calls")))
            bad("messages", where + ".content is required");
        if (m.contains("content") && m["content"].is_array()) {
            std::string text;
            for (const auto& part : m["content"]) {
                if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
                    !part["text"].is_string())
                    bad("messages", where +
                                        ".content parts must be {\"type\": \"text\", \"text\": ...} (this "
                                        "server takes text only)");
                text += part["text"].get<std::string>();
            }
            n["content"] = text;
        } else if (m.contains("content") && !m["content"].is_string() && !m["content"].is_null()) {
            bad("messages", where + ".content must be a string, null or an array of text parts");
        }
        for (const char* k : {"name", "tool_call_id", "reasoning_content"})
            if (m.contains(k) && !m[k].is_string()) bad("messages", where + "." + k + " must be a string");
        if (m.contains("tool_calls")) {
            if (!m["tool_calls"].is_array()) bad("messages", where + ".tool_calls must be an array");
            // Templates index tool_call.function.arguments as an object (Hugging Face's convention); OpenAI
            // sends it as JSON text: parsed here as llama.cpp does.
            for (auto& call : n["tool_calls"]) {
                if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
                    bad("messages", where + ".tool_calls[] must be {\"type\": \"function\", \"function\": ...}");
                json& fn = call["function"];
                if (fn.contains("arguments") && fn["arguments"].is_string()) {
                    json args = json::parse(fn["arguments"].get<std::string>(), nullptr, false);
                    if (!args.is_discarded()) fn["arguments"] = std::move(args);
                }
            }
        }
        normalized.push_back(std::move(n));
    }
    // Tools: given to the template, or described by the fallback block (which rewrites earlier tool turns).
    json tools;
    read_tools(body, model.tools, normalized, tools, g.tools, spec);
    std::vector<ChatMessage> messages;  // the native families' view: role and content
    if (!jinja) {
        for (const json& m : normalized) {
            ChatMessage msg;
            msg.role = m["role"].get<std::string>();  // tool turns were rewritten as user turns
            if (m.contains("content") && m["content"].is_string()) msg.content = m["content"].get<std::string>();
            messages.push_back(std::move(msg));
        }
    }
    cli::RequestSpec s = spec;
    std::vector<ChatPiece> pieces;
    try {
        if (jinja)
            pieces = model.chat.render_conversation(
                normalized, tools, present(body, "chat_template_kwargs") ? body["chat_template_kwargs"] : json(), true);
        else
            pieces = model.chat.render_pieces(messages, true);
    } catch (const std::invalid_argument& e) {
        bad("messages", e.what());
    }
    // The rendered text with special tokens parsed is the trusted clients' prompt; otherwise the exchange tokenizes
    // the pieces, content as text (chat-tokens.hpp).
    for (const ChatPiece& p : pieces) s.prompt += p.text;
    s.flags |= BASALT_REQUEST_PARSE_SPECIAL;
    if (!model.trust_client_special_tokens) g.chat_pieces = std::move(pieces);
    // The reply's reasoning in reasoning_content, as llama-server's reasoning_format: "none" keeps it in content.
    g.split_reasoning = model.split_reasoning;
    if (present(body, "reasoning_format")) {
        const json& f = body["reasoning_format"];
        if (!f.is_string() || (f != "none" && f != "auto" && f != "deepseek"))
            bad("reasoning_format", "'reasoning_format' must be \"none\", \"auto\" or \"deepseek\"");
        g.split_reasoning = f != "none";
    }
    g.reasoning = model.reasoning;
    // A reply constrained to tool calls from its first token does not start inside a reasoning block.
    g.reasoning_open = g.split_reasoning && !g.tools.from_start && prompt_opens_reasoning(s.prompt, model.reasoning);
    for (const auto& st : model.chat.stop_strings()) s.stop.push_back(st);
    s.stop_tokens.insert(s.stop_tokens.end(), model.chat_stop_tokens.begin(), model.chat_stop_tokens.end());
    g.prompts.push_back(std::move(s));
    check_prompt_bytes(g, model, "messages");
    return g;
}

}  // namespace basalt::serve
