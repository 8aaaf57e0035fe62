#include "template-routes.hpp"

#include <climits>

namespace basalt::serve {
namespace {

[[noreturn]] void bad(const char* field, const std::string& message) {
    throw ApiError(400, message, field);
}

bool flag(const json& body, const char* key, bool dflt) {
    if (!body.contains(key) || body[key].is_null()) return dflt;
    if (!body[key].is_boolean()) bad(key, std::string("'") + key + "' must be a boolean");
    return body[key].get<bool>();
}

std::vector<int32_t> tokenize(const basalt_model* model, const std::string& text, uint32_t flags) {
    size_t n = 0;
    basalt_status st = basalt_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
    if (st != BASALT_OK && st != BASALT_ERR_CAPACITY) throw ApiError(400, basalt_last_error(), "content");
    std::vector<int32_t> ids(n);
    if (n != 0 && basalt_tokenize(model, text.data(), text.size(), flags, ids.data(), ids.size(), &n) != BASALT_OK)
        throw ApiError(400, basalt_last_error(), "content");
    ids.resize(n);
    return ids;
}

std::string piece(const basalt_model* model, int32_t id) {
    char buf[256];
    size_t len = 0;
    if (basalt_token_to_piece(model, id, 1, buf, sizeof buf, &len) == BASALT_OK) return std::string(buf, len);
    std::string big(len + 1, '\0');
    if (basalt_token_to_piece(model, id, 1, big.data(), big.size(), &len) != BASALT_OK)
        throw ApiError(400, basalt_last_error(), "tokens");
    big.resize(len);
    return big;
}

bool valid_utf8(const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        i += n;
    }
    return true;
}

}  // namespace

bool is_template_route(const std::string& target) {
    return target == "/apply-template" || target == "/tokenize" || target == "/detokenize";
}

json template_route(const std::string& target, const json& body, const ServedModel& served, const basalt_model* model) {
    if (!body.is_object()) throw ApiError(400, "the body must be a JSON object");
    if (target == "/apply-template") {
        // The chat completion body, rendered as a chat request's prompt is (same checks, same template).
        const GenerationRequest g = parse_chat(body, served);
        std::string prompt;
        if (!g.chat_pieces.empty())
            for (const ChatPiece& p : g.chat_pieces) prompt += p.text;
        else
            prompt = g.prompts.at(0).prompt;
        return json{{"prompt", prompt}};
    }
    if (target == "/tokenize") {
        if (!body.contains("content") || !body["content"].is_string()) bad("content", "'content' must be a string");
        const bool with_pieces = flag(body, "with_pieces", false);
        uint32_t flags = 0;
        if (flag(body, "add_special", false)) flags |= BASALT_TOKENIZE_ADD_SPECIAL;
        if (flag(body, "parse_special", true)) flags |= BASALT_TOKENIZE_PARSE_SPECIAL;
        const auto ids = tokenize(model, body["content"].get<std::string>(), flags);
        json tokens = json::array();
        for (int32_t id : ids) {
            if (!with_pieces) {
                tokens.push_back(id);
                continue;
            }
            // llama-server: the piece as text when it is valid UTF-8, else its bytes
            const std::string p = piece(model, id);
            json bytes = json::array();
            for (unsigned char c : p) bytes.push_back(c);
            tokens.push_back({{"id", id}, {"piece", valid_utf8(p) ? json(p) : bytes}});
        }
        return json{{"tokens", tokens}};
    }
    // /detokenize
    if (!body.contains("tokens") || !body["tokens"].is_array()) bad("tokens", "'tokens' must be an array of ids");
    std::string content;
    for (const auto& t : body["tokens"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= static_cast<int64_t>(served.n_vocab))
            bad("tokens", "'tokens' must hold ids in [0, " + std::to_string(served.n_vocab) + ")");
        content += piece(model, static_cast<int32_t>(t.get<int64_t>()));
    }
    return json{{"content", content}};
}

}  // namespace basalt::serve
