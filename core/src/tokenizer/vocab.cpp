#include "tokenizer/vocab.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

#include "model/gguf.hpp"
#include "support/error.hpp"
#include "support/heap-bytes.hpp"
#include "support/log.hpp"
#include "tokenizer/unicode.hpp"

namespace basalt {

namespace {

constexpr const char* kKeyModel = "tokenizer.ggml.model";
constexpr const char* kKeyPre = "tokenizer.ggml.pre";
constexpr const char* kKeyTokens = "tokenizer.ggml.tokens";
constexpr const char* kKeyScores = "tokenizer.ggml.scores";
constexpr const char* kKeyTypes = "tokenizer.ggml.token_type";
constexpr const char* kKeyMerges = "tokenizer.ggml.merges";
constexpr const char* kKeyCharsmap = "tokenizer.ggml.precompiled_charsmap";
constexpr const char* kKeyAddBos = "tokenizer.ggml.add_bos_token";
constexpr const char* kKeyAddEos = "tokenizer.ggml.add_eos_token";
constexpr const char* kKeyAddSep = "tokenizer.ggml.add_sep_token";
constexpr const char* kKeyBosId = "tokenizer.ggml.bos_token_id";
constexpr const char* kKeyEosId = "tokenizer.ggml.eos_token_id";
constexpr const char* kKeySepId = "tokenizer.ggml.seperator_token_id";  // sic: the GGUF spelling

// GGUF token types (tokenizer.ggml.token_type).
enum GgufTokenType : int64_t {
    TYPE_UNDEFINED = 0,
    TYPE_NORMAL = 1,
    TYPE_UNKNOWN = 2,
    TYPE_CONTROL = 3,
    TYPE_USER_DEFINED = 4,
    TYPE_UNUSED = 5,
    TYPE_BYTE = 6,
};

uint32_t attr_of_type(int64_t type) {
    switch (type) {
        case TYPE_UNKNOWN:
            return ATTR_UNKNOWN;
        case TYPE_UNUSED:
            return ATTR_UNUSED;
        case TYPE_NORMAL:
            return ATTR_NORMAL;
        case TYPE_CONTROL:
            return ATTR_CONTROL;
        case TYPE_USER_DEFINED:
            return ATTR_USER_DEFINED;
        case TYPE_BYTE:
            return ATTR_BYTE;
        default:
            return ATTR_UNDEFINED;
    }
}

// What a `tokenizer.ggml.pre` name selects, with the flags llama.cpp sets for it.
struct PreInfo {
    const char* name;
    PreType type;
    bool clean_spaces;
    bool ignore_merges = false;
    bool add_bos = false;
    bool add_sep = false;
    bool no_bos = false;  // the model has no BOS token by default
};

// clang-format off
const PreInfo kPreTokenizers[] = {
    {"default", PreType::DEFAULT, true},
    {"llama3", PreType::LLAMA3, true, true, true},
    {"llama-v3", PreType::LLAMA3, true, true, true},
    {"llama-bpe", PreType::LLAMA3, true, true, true},
    {"falcon3", PreType::LLAMA3, true, true, true},
    {"falcon-h1", PreType::LLAMA3, true, true, true},
    {"pixtral", PreType::LLAMA3, true, true, true},
    {"midm-2.0", PreType::LLAMA3, true, true, true},
    {"lfm2", PreType::LLAMA3, true, true, true},
    {"jina-v5-nano", PreType::LLAMA3, true, true, true},
    {"dbrx", PreType::LLAMA3, true},
    {"smaug-bpe", PreType::LLAMA3, true},
    {"glm4", PreType::LLAMA3, true, false, false, false, true},
    {"chatglm-bpe", PreType::LLAMA3, true, false, false, false, true},
    {"deepseek-llm", PreType::DEEPSEEK_LLM, false},
    {"deepseek-coder", PreType::DEEPSEEK_CODER, false},
    {"falcon", PreType::FALCON, true},
    {"gpt-2", PreType::GPT2, true},
    {"phi-2", PreType::GPT2, true},
    {"jina-es", PreType::GPT2, true},
    {"jina-de", PreType::GPT2, true},
    {"gigachat", PreType::GPT2, true},
    {"jina-v2-es", PreType::GPT2, true},
    {"jina-v2-de", PreType::GPT2, true},
    {"a.x-4.0", PreType::GPT2, true},
    {"mellum", PreType::GPT2, true},
    {"modern-bert", PreType::GPT2, true},
    {"exaone4", PreType::GPT2, true},
    {"jina-v1-en", PreType::GPT2, true, false, false, true},
    {"jina-v2-code", PreType::GPT2, true, false, false, true},
    {"roberta-bpe", PreType::GPT2, true, false, false, true},
    {"mpt", PreType::GPT2, true},
    {"olmo", PreType::GPT2, true},
    {"jais", PreType::GPT2, true},
    {"trillion", PreType::GPT2, false},
    {"granite-docling", PreType::GPT2, false},
    {"starcoder", PreType::STARCODER, true},
    {"refact", PreType::STARCODER, true},
    {"command-r", PreType::STARCODER, false},
    {"smollm", PreType::STARCODER, false},
    {"codeshell", PreType::STARCODER, true},
    {"exaone", PreType::STARCODER, true},
    {"minerva-7b", PreType::STARCODER, true},
    {"mellum2", PreType::STARCODER, true},
    {"qwen2", PreType::QWEN2, false},
    {"deepseek-r1-qwen", PreType::QWEN2, false},
    {"kormo", PreType::QWEN2, false},
    {"f2llmv2", PreType::QWEN2, false},
    {"stablelm2", PreType::QWEN2, true},
    {"megrez", PreType::QWEN2, true},
    {"hunyuan", PreType::QWEN2, false},
    {"solar-open", PreType::QWEN2, false},
    {"grok-2", PreType::QWEN2, false},
    {"qwen35", PreType::QWEN35, false},
    {"poro-chat", PreType::PORO, false},
    {"bloom", PreType::PORO, true},
    {"gpt3-finnish", PreType::PORO, true},
    {"viking", PreType::VIKING, false},
    {"tekken", PreType::TEKKEN, false, true, true},
    {"gpt-4o", PreType::GPT4O, false},
    {"llama4", PreType::GPT4O, false},
    {"kanana2", PreType::GPT4O, false},
    {"talkie", PreType::GPT4O, false},
    {"minimax-m2", PreType::GPT4O, false},
    {"seed-coder", PreType::SEED_CODER, false},
    {"ufakzeka", PreType::UFAKZEKA, false},
    {"laguna", PreType::LAGUNA, false},
    {"minicpm5", PreType::MINICPM5, true, true},
    {"bailingmoe", PreType::BAILINGMOE, false},
    {"bailingmoe2", PreType::BAILINGMOE, false},
    {"llada-moe", PreType::BAILINGMOE, false},
    {"gemma4", PreType::GEMMA4, true},
    {"granite-embed-multi-311m", PreType::GEMMA4, true},
};
// clang-format on

// Texts llama.cpp recognises as special tokens when the GGUF does not say (see llama-vocab.cpp).
const char* const kEotTexts[] = {"<|eot_id|>",        "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                 "<|end_of_text|>",   "<EOT>",      "_<EOT>",  "[EOT]",         "<｜end▁of▁sentence｜>",
                                 "<end_of_utterance>"};
const char* const kEomTexts[] = {"<|eom_id|>"};
const char* const kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",    "<｜fim▁begin｜>",
                                    "<PRE>",          "▁<PRE>",       "<|code_prefix|>", "<|prefix|>"};
const char* const kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",    "<｜fim▁hole｜>",
                                    "<SUF>",          "▁<SUF>",       "<|code_suffix|>", "<|suffix|>"};
const char* const kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",    "<｜fim▁end｜>",
                                    "<MID>",          "▁<MID>",       "<|code_middle|>", "<|middle|>"};
const char* const kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
const char* const kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
const char* const kFimSepTexts[] = {"<|file_sep|>"};
const char* const kEogTexts[] = {"<|eot_id|>",
                                 "<|im_end|>",
                                 "<|end|>",
                                 "<|return|>",
                                 "<|call|>",
                                 "<|flush|>",
                                 "<|calls|>",
                                 "<end_of_turn>",
                                 "<|endoftext|>",
                                 "</s>",
                                 "<|eom_id|>",
                                 "<EOT>",
                                 "_<EOT>",
                                 "[EOT]",
                                 "[EOS]",
                                 "<|end_of_text|>",
                                 "<end_of_utterance>",
                                 "<eos>",
                                 "<turn|>",
                                 "<|tool_response>",
                                 "<｜end▁of▁sentence｜>",
                                 "[e~["};

template <size_t N>
bool one_of(const std::string& s, const char* const (&list)[N]) {
    // Every listed text starts with '<', '[', '_' or U+2581; most tokens are rejected by that alone.
    if (s.empty() || (s[0] != '<' && s[0] != '[' && s[0] != '_' && s[0] != '\xE2')) return false;
    return std::any_of(std::begin(list), std::end(list), [&](const char* t) { return s == t; });
}

std::string lower_ascii(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

class Loader {
  public:
    explicit Loader(const gguf::File& f) : f_(f) {}

    [[noreturn]] void format_error(std::string_view what) const {
        fail(BASALT_ERR_FORMAT, "{}: vocabulary: {}", f_.source(), what);
    }

    const gguf::Value& require_array(const char* key, std::string_view of) const {
        const gguf::Value* v = f_.find(key);
        if (v == nullptr) format_error(fmt::format("missing key '{}'", key));
        if (v->type != gguf::ValueType::ARRAY) {
            format_error(fmt::format("'{}' is a {}, expected an array of {}", key, gguf::value_type_name(v->type), of));
        }
        return *v;
    }

    Vocab load() {
        Vocab v;
        v.source = f_.source();
        read_model(v);
        read_tokens(v);
        read_special_ids(v);
        read_flags(v);
        fix_special_attributes(v);
        return v;
    }

  private:
    const gguf::File& f_;

    void read_model(Vocab& v) {
        auto model = f_.get_string(kKeyModel);
        if (!model) format_error(fmt::format("missing key '{}'", kKeyModel));
        v.model_name = *model;
        v.pre_name = f_.get_string(kKeyPre).value_or("");

        // Default special ids per family (checked against the vocabulary size later).
        if (v.model_name == "llama") {
            v.type = VocabType::SPM;
            v.bos = 1;
            v.eos = 2;
            v.unk = 0;
        } else if (v.model_name == "bert") {
            v.type = VocabType::WPM;
            v.bos = 101;
            v.unk = 100;
            v.sep = 102;
            v.pad = 0;
            v.mask = 103;
            v.add_sep = true;
        } else if (v.model_name == "gpt2") {
            v.type = VocabType::BPE;
            v.bos = 11;
            v.eos = 11;
            read_merges(v);
        } else if (v.model_name == "gemma4") {
            // BPE merges over SentencePiece-style pieces; llama.cpp names the pre-tokenizer after the model and
            // leaves every special id to the file.
            v.type = VocabType::BPE;
            v.pre_name = "gemma4";
            read_merges(v);
        } else if (v.model_name == "t5") {
            v.type = VocabType::UGM;
            v.eos = 1;
            v.unk = 2;
            v.pad = 0;
            read_charsmap(v);
        } else {
            fail(BASALT_ERR_UNSUPPORTED,
                 "{}: vocabulary: {} = '{}' is not supported (supported: llama, gpt2, gemma4, bert, t5)", f_.source(),
                 kKeyModel, v.model_name);
        }

        switch (v.type) {
            case VocabType::BPE: {
                v.add_space_prefix = false;
                v.escape_whitespaces = false;
                v.clean_spaces = true;
                if (v.pre_name.empty()) {
                    log::warn("{}: {} is missing, using the default pre-tokenizer (quality may suffer)", f_.source(),
                              kKeyPre);
                    v.pre_type = PreType::DEFAULT;
                    break;
                }
                const auto* it = std::find_if(std::begin(kPreTokenizers), std::end(kPreTokenizers),
                                              [&](const PreInfo& p) { return v.pre_name == p.name; });
                if (it == std::end(kPreTokenizers)) {
                    fail(BASALT_ERR_UNSUPPORTED, "{}: vocabulary: {} = '{}' is not a supported pre-tokenizer",
                         f_.source(), kKeyPre, v.pre_name);
                }
                v.pre_type = it->type;
                v.clean_spaces = it->clean_spaces;
                v.ignore_merges = it->ignore_merges;
                if (it->add_bos) v.add_bos = true;
                if (it->add_sep) v.add_sep = true;
                if (it->no_bos) v.bos = kTokenNull;
                if (v.pre_type == PreType::GEMMA4) v.escape_whitespaces = true;  // spaces are U+2581 in its pieces
                break;
            }
            case VocabType::SPM:
                v.add_space_prefix = true;
                v.clean_spaces = false;
                v.add_bos = true;
                v.add_eos = false;
                break;
            case VocabType::WPM:
                v.add_space_prefix = false;
                v.clean_spaces = true;
                v.add_bos = true;
                v.add_eos = false;
                v.add_sep = true;
                break;
            case VocabType::UGM:
                v.add_bos = false;
                v.add_eos = true;
                break;
        }
        v.add_space_prefix = f_.get_bool("tokenizer.ggml.add_space_prefix").value_or(v.add_space_prefix);
        v.remove_extra_whitespaces =
            f_.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(v.remove_extra_whitespaces);
    }

    void read_merges(Vocab& v) {
        const gguf::Value* m = f_.find(kKeyMerges);
        if (m == nullptr) format_error(fmt::format("missing key '{}' (a gpt2 vocabulary needs merges)", kKeyMerges));
        if (m->type != gguf::ValueType::ARRAY || m->elem_type != gguf::ValueType::STRING) {
            format_error(fmt::format("'{}' must be an array of strings", kKeyMerges));
        }
        const size_t n_merges = m->array_size();
        v.bpe_ranks.reserve(n_merges);
        for (size_t i = 0; i < n_merges; ++i) {
            if (i > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
                format_error(fmt::format("'{}' has too many entries", kKeyMerges));
            }
            const std::string_view line = m->string_at(i);
            // "left right", split at the first space after the first byte; a line without one is an empty pair.
            const size_t pos = line.find(' ', 1);
            std::string key = pos == std::string_view::npos ? std::string(" ") : std::string(line);
            v.bpe_ranks.emplace(std::move(key), static_cast<int32_t>(i));
        }
    }

    void read_charsmap(Vocab& v) {
        const gguf::Value* c = f_.find(kKeyCharsmap);
        if (c == nullptr) return;
        if (c->type != gguf::ValueType::ARRAY ||
            (c->elem_type != gguf::ValueType::UINT8 && c->elem_type != gguf::ValueType::INT8)) {
            format_error(fmt::format("'{}' must be an array of uint8 or int8", kKeyCharsmap));
        }
        v.precompiled_charsmap.reserve(c->array_size());
        for (uint64_t k = 0; k < c->array_size(); ++k) {
            const gguf::Value e = c->element(k);
            const uint64_t raw = e.type == gguf::ValueType::INT8 ? static_cast<uint64_t>(e.i) : e.u;
            v.precompiled_charsmap.push_back(static_cast<uint8_t>(raw & 0xFF));
        }
        const auto& pc = v.precompiled_charsmap;
        if (pc.size() < 4) format_error(fmt::format("'{}' is too small ({} bytes)", kKeyCharsmap, pc.size()));
        const uint64_t blob = uint64_t(pc[0]) | uint64_t(pc[1]) << 8 | uint64_t(pc[2]) << 16 | uint64_t(pc[3]) << 24;
        if (blob + 4 >= pc.size() || blob % 4 != 0) {
            format_error(fmt::format("'{}': XCDA size {} does not fit its {} bytes", kKeyCharsmap, blob, pc.size()));
        }
    }

    void read_tokens(Vocab& v) {
        const gguf::Value& toks = require_array(kKeyTokens, "strings");
        if (toks.elem_type != gguf::ValueType::STRING) format_error(fmt::format("'{}' must hold strings", kKeyTokens));
        const size_t n = toks.array_size();
        if (n == 0) format_error(fmt::format("'{}' is empty", kKeyTokens));
        if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
            format_error(fmt::format("'{}' has {} entries, more than an int32 id can address", kKeyTokens, n));
        }

        std::vector<float> scores;
        if (const gguf::Value* s = f_.find(kKeyScores)) {
            const bool ok = s->type == gguf::ValueType::ARRAY &&
                            (s->elem_type == gguf::ValueType::FLOAT32 || s->elem_type == gguf::ValueType::FLOAT64 ||
                             s->elem_type == gguf::ValueType::INT32);
            if (!ok) format_error(fmt::format("'{}' must be an array of float32 or int32", kKeyScores));
            if (s->array_size() < n) {
                format_error(fmt::format("'{}' has {} entries for {} tokens", kKeyScores, s->array_size(), n));
            }
            scores.reserve(n);
            for (size_t i = 0; i < n; ++i) {
                const gguf::Value e = s->element(i);
                scores.push_back(e.is_float() ? static_cast<float>(e.f) : static_cast<float>(e.as_int().value_or(0)));
            }
        }
        std::vector<int64_t> types;
        if (const gguf::Value* t = f_.find(kKeyTypes)) {
            if (t->type != gguf::ValueType::ARRAY)
                format_error(fmt::format("'{}' must be an array of int32", kKeyTypes));
            if (t->array_size() < n) {
                format_error(fmt::format("'{}' has {} entries for {} tokens", kKeyTypes, t->array_size(), n));
            }
            types.reserve(n);
            for (size_t i = 0; i < n; ++i) {
                auto ti = t->element(i).as_int();
                if (!ti) format_error(fmt::format("'{}' must be an array of int32", kKeyTypes));
                types.push_back(*ti);
            }
        }

        v.tokens.resize(n);
        // Not reserved: the map's iteration order then matches llama.cpp's (same hash, same growth), which
        // decides which text-detected special token wins below.
        for (size_t i = 0; i < n; ++i) {
            std::string text(toks.string_at(i));
            if (text.empty()) {
                log::warn("{}: empty token at index {}", f_.source(), i);
                text = fmt::format("[EMPTY_{}]", i);
            }
            auto [it, inserted] = v.token_to_id.emplace(text, static_cast<int32_t>(i));
            if (!inserted) {
                format_error(
                    fmt::format("duplicate token '{}' in '{}' (ids {} and {})", text, kKeyTokens, it->second, i));
            }
            v.max_token_len = std::max(v.max_token_len, text.size());
            TokenData& d = v.tokens[i];
            d.text = std::move(text);
            d.score = scores.empty() ? 0.0f : scores[i];
            d.attr = types.empty() ? ATTR_NORMAL : attr_of_type(types[i]);
        }
    }

    void read_special_ids(Vocab& v) {
        struct Key {
            const char* key;
            int32_t* id;
        };
        const Key keys[] = {
            {kKeyBosId, &v.bos},
            {kKeyEosId, &v.eos},
            {"tokenizer.ggml.eot_token_id", &v.eot},
            {"tokenizer.ggml.eom_token_id", &v.eom},
            {"tokenizer.ggml.unknown_token_id", &v.unk},
            {kKeySepId, &v.sep},
            {"tokenizer.ggml.padding_token_id", &v.pad},
            {"tokenizer.ggml.mask_token_id", &v.mask},
            {"tokenizer.ggml.fim_pre_token_id", &v.fim_pre},
            {"tokenizer.ggml.fim_suf_token_id", &v.fim_suf},
            {"tokenizer.ggml.fim_mid_token_id", &v.fim_mid},
            {"tokenizer.ggml.fim_pad_token_id", &v.fim_pad},
            {"tokenizer.ggml.fim_rep_token_id", &v.fim_rep},
            {"tokenizer.ggml.fim_sep_token_id", &v.fim_sep},
            // deprecated spellings of the FIM ids
            {"tokenizer.ggml.prefix_token_id", &v.fim_pre},
            {"tokenizer.ggml.suffix_token_id", &v.fim_suf},
            {"tokenizer.ggml.middle_token_id", &v.fim_mid},
        };
        for (const auto& k : keys) {
            if (*k.id != kTokenNull && !v.valid(*k.id)) {
                log::warn("{}: default {} = {} is outside the vocabulary, disabling it", f_.source(), k.key, *k.id);
                *k.id = kTokenNull;
            }
            auto value = f_.get_int(k.key);
            if (!value) continue;
            if (*value < 0 || *value >= static_cast<int64_t>(v.size())) {
                log::warn("{}: bad special token {} = {} (vocabulary has {}), using {}", f_.source(), k.key, *value,
                          v.size(), *k.id);
                continue;
            }
            *k.id = static_cast<int32_t>(*value);
        }
    }

    void read_flags(Vocab& v) {
        v.add_bos = f_.get_bool(kKeyAddBos).value_or(v.add_bos);
        v.add_eos = f_.get_bool(kKeyAddEos).value_or(v.add_eos);
        v.add_sep = f_.get_bool(kKeyAddSep).value_or(v.add_sep);
        if (v.pre_type == PreType::GEMMA4) v.add_bos = true;  // llama.cpp overrides the key for Gemma 4
        const auto check = [&](bool add, int32_t id, const char* add_key, const char* id_key) {
            if (add && id == kTokenNull)
                format_error(fmt::format("'{}' is true, but '{}' is not set", add_key, id_key));
        };
        check(v.add_bos, v.bos, kKeyAddBos, kKeyBosId);
        check(v.add_eos, v.eos, kKeyAddEos, kKeyEosId);
        check(v.add_sep, v.sep, kKeyAddSep, kKeySepId);

        v.lowercase = f_.get_bool("tokenizer.ggml.normalizer.lowercase").value_or(v.lowercase);
        v.strip_accents = v.lowercase;
        v.strip_accents = f_.get_bool("tokenizer.ggml.normalizer.strip_accents").value_or(v.strip_accents);
    }

    // llama.cpp's fix-ups of special tokens by their text (control bits, EOG set, per-model strip flags).
    void fix_special_attributes(Vocab& v) {
        const auto make_control = [&](int32_t id) {
            uint32_t& attr = v.tokens[static_cast<size_t>(id)].attr;
            if ((attr & ATTR_CONTROL) == 0) {
                log::debug("{}: control-looking token {} '{}' was not control-type; overriding", f_.source(), id,
                           v.tokens[static_cast<size_t>(id)].text);
                attr |= ATTR_CONTROL;
            }
        };
        // Iterated in the map's order as llama.cpp does, which decides the pick when several texts match.
        for (const auto& [text, id] : v.token_to_id) {
            const auto detect = [&](int32_t& slot, const auto& list) {
                if (slot == kTokenNull && one_of(text, list)) {
                    slot = id;
                    make_control(id);
                }
            };
            detect(v.eot, kEotTexts);
            detect(v.eom, kEomTexts);
            detect(v.fim_pre, kFimPreTexts);
            detect(v.fim_suf, kFimSufTexts);
            detect(v.fim_mid, kFimMidTexts);
            detect(v.fim_pad, kFimPadTexts);
            detect(v.fim_rep, kFimRepTexts);
            detect(v.fim_sep, kFimSepTexts);
        }
        // Control tokens named "unused..." are unused.
        for (auto& t : v.tokens) {
            if ((t.attr & ATTR_CONTROL) && !(t.attr & ATTR_UNUSED) && t.text.find("unused") != std::string::npos) {
                t.attr |= ATTR_UNUSED;
            }
        }
        // End-of-generation tokens.
        for (int32_t id : {v.fim_pad, v.fim_rep, v.fim_sep}) {
            if (id != kTokenNull) v.eog.insert(id);
        }
        for (const auto& [text, id] : v.token_to_id) {
            if (one_of(text, kEogTexts)) {
                v.eog.insert(id);
                make_control(id);
            }
        }
        for (const auto& [text, id] : v.token_to_id) {
            if (text == "<|channel|>" || text == "<|message|>" || text == "<|start|>" || text == "<|constrain|>") {
                v.tokens[static_cast<size_t>(id)].attr = ATTR_USER_DEFINED;  // gpt-oss: always rendered
            }
        }
        for (int32_t id : {v.eos, v.eot, v.eom}) {
            if (id != kTokenNull) v.eog.insert(id);
        }
        const auto find_eog = [&](std::string_view text) {
            for (int32_t id : v.eog) {
                if (v.valid(id) && v.tokens[static_cast<size_t>(id)].text == text) return id;
            }
            return kTokenNull;
        };
        // o200k_harmony / solar-open: "<|end|>" does not end generation when "<|return|>"/"<|call|>" exist.
        {
            const int32_t end = find_eog("<|end|>");
            const bool has_return = find_eog("<|return|>") != kTokenNull;
            const bool has_call = find_eog("<|call|>") != kTokenNull || find_eog("<|calls|>") != kTokenNull;
            const bool has_flush = find_eog("<|flush|>") != kTokenNull;
            if (end != kTokenNull && ((has_return && has_call) || (has_call && has_flush))) {
                v.eog.erase(end);
                v.tokens[static_cast<size_t>(end)].attr = ATTR_USER_DEFINED;
            }
        }
        // gemma4 / paddleocr: "</s>" is a normal token when "<|tool_response>" ends generation.
        {
            const int32_t s = find_eog("</s>");
            if (s != kTokenNull && find_eog("<|tool_response>") != kTokenNull) {
                v.eog.erase(s);
                v.tokens[static_cast<size_t>(s)].attr = ATTR_NORMAL;
            }
        }

        for (size_t id = 0; id < v.size(); ++id) {
            if (v.tokens[id].attr & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) {
                v.special_tokens.push_back(static_cast<int32_t>(id));
            }
        }
        std::stable_sort(v.special_tokens.begin(), v.special_tokens.end(), [&](int32_t a, int32_t b) {
            return v.tokens[static_cast<size_t>(a)].text.size() > v.tokens[static_cast<size_t>(b)].text.size();
        });

        // Per-model strip flags (llama.cpp keys them on general.name, the pre-tokenizer and the architecture).
        const std::string name = lower_ascii(f_.get_string("general.name").value_or(""));
        const std::string arch = f_.get_string("general.architecture").value_or("");
        const auto contains = [](const std::string& s, std::initializer_list<const char*> subs) {
            return std::any_of(subs.begin(), subs.end(), [&](const char* x) { return s.find(x) != std::string::npos; });
        };
        const auto set_attr = [&](std::string_view text, uint32_t bit, bool on) {
            const int32_t id = v.find(text);
            if (id == kTokenNull) return;
            uint32_t& a = v.tokens[static_cast<size_t>(id)].attr;
            a = on ? (a | bit) : (a & ~bit);
        };
        if (contains(v.pre_name, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
            contains(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
            set_attr("<mask>", ATTR_LSTRIP, true);
        } else if (contains(name, {"phi-3", "phi3"})) {
            for (int32_t id : v.special_tokens) v.tokens[static_cast<size_t>(id)].attr |= ATTR_RSTRIP;
            set_attr("</s>", ATTR_RSTRIP, true);
            for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(t, ATTR_RSTRIP, false);
        } else if (contains(name, {"modern-bert"})) {
            set_attr("[MASK]", ATTR_LSTRIP, true);
        }
    }
};

}  // namespace

const char* vocab_type_name(VocabType type) noexcept {
    switch (type) {
        case VocabType::SPM:
            return "SPM";
        case VocabType::BPE:
            return "BPE";
        case VocabType::WPM:
            return "WPM";
        case VocabType::UGM:
            return "UGM";
    }
    return "unknown";
}

Vocab Vocab::load(const gguf::File& file) {
    return Loader(file).load();
}

uint64_t Vocab::host_bytes() const noexcept {
    uint64_t b = heap::chunk(tokens.capacity() * sizeof(TokenData));
    for (const TokenData& t : tokens) b += heap::of(t.text);
    return b + heap::of(token_to_id) + heap::of(bpe_ranks) + heap::of(precompiled_charsmap) + heap::of(special_tokens) +
           heap::of(eog) + heap::of(model_name) + heap::of(pre_name) + heap::of(source);
}

int32_t Vocab::find(std::string_view text) const noexcept {
    const auto it = token_to_id.find(text);
    return it == token_to_id.end() ? kTokenNull : it->second;
}

int32_t Vocab::bpe_rank(std::string_view left, std::string_view right) const {
    std::string key;
    key.reserve(left.size() + 1 + right.size());
    key.append(left).push_back(' ');
    key.append(right);
    const auto it = bpe_ranks.find(key);
    return it == bpe_ranks.end() ? -1 : it->second;
}

int32_t Vocab::byte_to_token(uint8_t byte) const {
    switch (type) {
        case VocabType::SPM:
        case VocabType::UGM: {
            static constexpr char kHex[] = "0123456789ABCDEF";
            const char buf[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
            const int32_t id = find(std::string_view(buf, sizeof(buf)));
            if (id != kTokenNull) return id;
            const char raw = static_cast<char>(byte);
            return find(std::string_view(&raw, 1));
        }
        case VocabType::BPE:
            if (pre_type == PreType::GEMMA4) {
                static constexpr char kHex[] = "0123456789ABCDEF";
                const char buf[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
                return find(std::string_view(buf, sizeof(buf)));
            }
            return find(unicode::byte_to_bpe_char(byte));
        case VocabType::WPM:
            return find(unicode::byte_to_bpe_char(byte));
    }
    return kTokenNull;
}

uint8_t Vocab::token_to_byte(int32_t id) const {
    const std::string& t = tokens.at(static_cast<size_t>(id)).text;
    // "<0xXX>"; parsed leniently like strtol on the two characters.
    uint8_t value = 0;
    for (size_t i = 3; i < 5 && i < t.size(); ++i) {
        const char c = t[i];
        int d = -1;
        if (c >= '0' && c <= '9') d = c - '0';
        if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        if (d < 0) break;
        value = static_cast<uint8_t>(value * 16 + d);
    }
    return value;
}

}  // namespace basalt
