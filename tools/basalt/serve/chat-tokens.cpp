#include "chat-tokens.hpp"

#include <cctype>
#include <map>
#include <stdexcept>
#include <string>

namespace basalt::serve {
namespace {

std::vector<int32_t> tokenize(const basalt_model* model, const std::string& text, uint32_t flags) {
    size_t n = 0;
    basalt_status st = basalt_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
    if (st != BASALT_OK && st != BASALT_ERR_CAPACITY) throw std::runtime_error(basalt_last_error());
    std::vector<int32_t> ids(n);
    if (n == 0) return ids;
    if (basalt_tokenize(model, text.data(), text.size(), flags, ids.data(), ids.size(), &n) != BASALT_OK)
        throw std::runtime_error(basalt_last_error());
    ids.resize(n);
    return ids;
}

// What a control piece is in this vocabulary. The tokenizer's view is asked through the public API: a piece is a
// control token when special-token parsing makes it one id that plain tokenization does not give; it strips the
// whitespace after it (rstrip) when "PIECE x" and "PIECEx" give the same ids, and before it (lstrip) likewise.
struct Control {
    bool is_control = false;
    int32_t id = -1;
    bool lstrip = false;
    bool rstrip = false;
};

Control describe(const basalt_model* model, const std::string& piece) {
    Control c;
    const auto parsed = tokenize(model, piece, BASALT_TOKENIZE_PARSE_SPECIAL);
    if (parsed.size() != 1 || parsed == tokenize(model, piece, 0)) return c;
    c.is_control = true;
    c.id = parsed[0];
    c.rstrip = tokenize(model, piece + " x", BASALT_TOKENIZE_PARSE_SPECIAL) ==
               tokenize(model, piece + "x", BASALT_TOKENIZE_PARSE_SPECIAL);
    c.lstrip = tokenize(model, "x " + piece, BASALT_TOKENIZE_PARSE_SPECIAL) ==
               tokenize(model, "x" + piece, BASALT_TOKENIZE_PARSE_SPECIAL);
    return c;
}

bool is_space(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;  // as the tokenizer's strip attributes test it
}

}  // namespace

std::vector<int32_t> tokenize_chat(const basalt_model* model, const std::vector<ChatPiece>& pieces) {
    basalt_special_tokens sp{};
    sp.struct_size = sizeof(sp);
    if (basalt_model_special_tokens(model, &sp) != BASALT_OK) throw std::runtime_error(basalt_last_error());
    std::vector<int32_t> out;
    if (sp.add_bos != 0 && sp.bos >= 0) out.push_back(sp.bos);

    std::map<std::string, Control> controls;
    std::string run;           // the plain text since the last control token
    bool strip_front = false;  // the control token before run strips the whitespace after it
    const auto flush = [&](bool strip_back) {
        size_t begin = 0, end = run.size();
        if (strip_front)
            while (begin < end && is_space(run[begin])) ++begin;
        if (strip_back)
            while (end > begin && is_space(run[end - 1])) --end;
        if (end > begin) {
            const auto ids = tokenize(model, run.substr(begin, end - begin), 0);
            out.insert(out.end(), ids.begin(), ids.end());
        }
        run.clear();
    };
    for (const ChatPiece& p : pieces) {
        if (!p.control) {
            run += p.text;
            continue;
        }
        auto it = controls.find(p.text);
        if (it == controls.end()) it = controls.emplace(p.text, describe(model, p.text)).first;
        const Control& c = it->second;
        if (!c.is_control) {  // not a control token of this vocabulary: text, as it would be in render()'s text
            run += p.text;
            continue;
        }
        flush(c.lstrip);
        out.push_back(c.id);
        strip_front = c.rstrip;
    }
    flush(false);
    // A template that writes {{ bos_token }} itself: one BOS, not the vocabulary's and the template's.
    if (sp.add_bos != 0 && sp.bos >= 0 && out.size() >= 2 && out[1] == sp.bos) out.erase(out.begin());
    if (sp.add_eos != 0 && sp.eos >= 0) out.push_back(sp.eos);
    return out;
}

}  // namespace basalt::serve
