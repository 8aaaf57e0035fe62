// sampler-grammar ("grammar"): constrains generation to a grammar. Parameters: kind = gbnf (llama.cpp's GBNF,
// the default), json_schema, regex, json (any JSON object) or gbnf_schemas (GBNF whose rules may be JSON Schemas,
// for tool calls), and the grammar as text = ... or file = PATH (a bare
// value is a file). The grammar is compiled at create, so a bad one fails the chain (a request's submit) naming
// the position or keyword. With the model's vocabulary (set_vocab, from the host) every apply sets -inf on each
// candidate whose token text cannot continue the output, and on end-of-generation tokens unless the grammar may
// end there. State per sequence: the parse positions after each accepted token (accept pushes, rollback pops,
// reset forgets, clone copies; the compiled matcher and its mask cache are shared). Draft-safe (depends on the
// logits and the accepted tokens only); its history is the generated output, not the prompt. Lazy (a gbnf_schemas
// grammar with a "trigger", tool calls under tool_choice auto): nothing is masked until the output spells the
// trigger; from the trigger's first byte on the output matches the grammar (a token whose bytes after the trigger
// the grammar refuses leaves it unarmed, waiting for the next trigger). A gbnf_schemas grammar's "tokens" name control
// tokens (no output text of their own) that stand for a marker's text: such a token is allowed where its text may
// come next, accepted as that text, and read as that text by the lazy trigger (a call marker that is one token).
#include <basalt/sdk/sampler-plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "grammar-source.hpp"
#include "mask-apply.hpp"
#include "matcher.hpp"
#include "token-trie.hpp"

namespace {

namespace g = basalt::grammar;

constexpr basalt::sdk::sampler_spec kGrammar = {
    "grammar",
    "structured output: masks tokens that cannot continue a GBNF grammar, a JSON Schema or a regex",
    BASALT_SAMPLER_DRAFT_SAFE | BASALT_SAMPLER_GENERATED_ONLY | BASALT_SAMPLER_NEEDS_VOCAB,
};

struct GrammarSampler {
    std::string key;  // kind + text: the matcher cache's key
    std::shared_ptr<const g::Grammar> grammar;
    std::shared_ptr<g::Matcher> matcher;
    std::string trigger;  // lazy: unconstrained until the output spells it ("" : constrained from the start)
    std::vector<std::pair<int32_t, std::string>> tokens;  // control tokens read as their marker's text
    // A position of the output: the grammar's state once armed; before, the output's last bytes (a trigger's
    // possible start).
    struct Pos {
        g::State state;
        bool armed = true;
        std::string tail;
    };
    std::vector<Pos> history;  // history[0]: before any output; back(): now

    explicit GrammarSampler(const basalt::sdk::params& p) {
        p.expect_only({"kind", "text", "file", "value"});
        const std::string kind(p.find("kind").value_or("gbnf"));
        std::string text;
        if (auto t = p.find("text")) {
            text = std::string(*t);
        } else if (auto f = p.find("file").has_value() ? p.find("file") : p.find("value")) {
            std::ifstream in{std::string(*f), std::ios::binary};
            if (!in) kGrammar.fail(BASALT_ERR_IO, "cannot read grammar file '" + std::string(*f) + "'");
            std::ostringstream ss;
            ss << in.rdbuf();
            text = ss.str();
        } else if (kind != "json") {
            kGrammar.fail(BASALT_ERR_INVALID_ARGUMENT, "give the grammar as text=... or file=PATH");
        }
        try {
            grammar = std::make_shared<const g::Grammar>(g::compile_source(kind, text));
            trigger = g::lazy_trigger(kind, text);
            tokens = g::control_tokens(kind, text);
        } catch (const g::GrammarError& e) {
            kGrammar.fail(BASALT_ERR_INVALID_ARGUMENT, e.what());
        } catch (const g::UnknownKind&) {
            p.bad("kind", kind, "gbnf, json_schema, regex, json or gbnf_schemas");
        }
        key = kind + '\n' + text;
    }

    void set_vocab(const basalt_vocab_view& v) {
        if (v.struct_size < sizeof(basalt_vocab_view) || v.texts == nullptr || v.text_lens == nullptr)
            kGrammar.fail(BASALT_ERR_INVALID_ARGUMENT, "set_vocab: an incomplete vocabulary view");
        matcher = g::shared_matcher(key, grammar, g::TokenTrie::shared(v));
        // Only control tokens of this vocabulary stand for a text (an end-of-generation token keeps its rule).
        const g::TokenTrie& trie = matcher->trie();
        std::erase_if(tokens, [&](const auto& t) {
            const auto id = static_cast<size_t>(t.first);
            return id >= trie.n_vocab || trie.is_eog[id] != 0 || !trie.texts[id].empty();
        });
        reset();
    }

    // The marker text a control token stands for, or nullptr.
    const std::string* token_text(int32_t token) const {
        for (const auto& [id, text] : tokens)
            if (id == token) return &text;
        return nullptr;
    }

    void need_vocab() const {
        if (!matcher)
            kGrammar.fail(BASALT_ERR_INVALID_ARGUMENT,
                          "needs the model's vocabulary: use it in a request's chain (or a chain made for a model)");
    }

    void apply(basalt_candidates& c) {
        need_vocab();
        if (!history.back().armed) return;  // lazy, before the trigger: every token
        c.selected = -1;
        bool changed = false;
        const g::State& now = history.back().state;
        std::vector<int32_t> allowed;  // control tokens whose text may come next
        for (const auto& [id, text] : tokens) {
            g::State after;
            if (matcher->accept_bytes(now, reinterpret_cast<const uint8_t*>(text.data()), text.size(), after))
                allowed.push_back(id);
        }
        matcher->with_mask(now, [&](const std::vector<uint64_t>& words) {
            if (allowed.empty()) {
                changed = g::apply_mask(words, matcher->trie().n_vocab, c);
                return;
            }
            std::vector<uint64_t> with_tokens = words;
            for (const int32_t id : allowed) with_tokens[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
            changed = g::apply_mask(with_tokens, matcher->trie().n_vocab, c);
        });
        if (changed) {
            c.sorted = 0;
            c.probs_valid = 0;
        }
    }

    void accept(int32_t token) {
        need_vocab();
        const Pos& now = history.back();
        if (!now.armed) {
            history.push_back(watch(now.tail, token));
            return;
        }
        Pos next;
        const std::string* text = token_text(token);
        const bool ok = text != nullptr
                            ? matcher->accept_bytes(now.state, reinterpret_cast<const uint8_t*>(text->data()),
                                                    text->size(), next.state)
                            : matcher->accept_token(now.state, token, next.state);
        if (!ok) {
            kGrammar.fail(BASALT_ERR_INVALID_ARGUMENT,
                          "token " + std::to_string(token) + " cannot continue the output under the grammar");
        }
        history.push_back(next);
    }

    // Lazy: the position after `token` before the grammar is armed. The trigger arms it when the bytes from the
    // trigger on match the grammar so far.
    Pos watch(const std::string& tail, int32_t token) const {
        const auto id = static_cast<size_t>(token);
        std::string bytes = tail;
        if (const std::string* text = token_text(token))
            bytes += *text;  // a control-token marker fires the trigger as its text does
        else if (token >= 0 && id < matcher->trie().texts.size())
            bytes += matcher->trie().texts[id];
        for (size_t at = bytes.find(trigger); at != std::string::npos; at = bytes.find(trigger, at + 1)) {
            Pos armed;
            if (matcher->accept_bytes(matcher->initial(), reinterpret_cast<const uint8_t*>(bytes.data() + at),
                                      bytes.size() - at, armed.state))
                return armed;
        }
        Pos waiting;
        waiting.armed = false;
        const size_t keep = std::min(bytes.size(), trigger.size() - 1);  // a trigger cut by the token's end
        waiting.tail = bytes.substr(bytes.size() - keep);
        return waiting;
    }

    void rollback(size_t n) {
        if (n >= history.size())
            kGrammar.fail(BASALT_ERR_INVALID_ARGUMENT, "rollback of " + std::to_string(n) + " tokens, but only " +
                                                           std::to_string(history.size() - 1) + " were accepted");
        history.resize(history.size() - n);
    }

    void reset() {
        if (!matcher) return;
        Pos start;
        start.state = matcher->initial();
        start.armed = trigger.empty();
        history.assign(1, start);
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-grammar", basalt::sdk::sampler<GrammarSampler, kGrammar>)
