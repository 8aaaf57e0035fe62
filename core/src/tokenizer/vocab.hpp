// The vocabulary of a model as stored in GGUF metadata (`tokenizer.ggml.*`): token texts, scores and types,
// BPE merges, special token ids and the tokenizer flags, resolved with llama.cpp's per-model defaults and
// its text-based fix-ups of special tokens. Immutable after load; safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace basalt {

namespace gguf {
class File;
}

constexpr int32_t kTokenNull = -1;

// Tokenizer families, named after `tokenizer.ggml.model`.
enum class VocabType {
    SPM,  // "llama": SentencePiece BPE with scores and byte fallback
    BPE,  // "gpt2": byte-level BPE with merges and a regex pre-tokenizer; "gemma4": the same on raw UTF-8
    WPM,  // "bert": WordPiece
    UGM,  // "t5": SentencePiece Unigram
};
const char* vocab_type_name(VocabType type) noexcept;

// Pre-tokenizers of byte-level BPE vocabularies (`tokenizer.ggml.pre`); each names one list of split patterns.
enum class PreType {
    DEFAULT,
    LLAMA3,
    DEEPSEEK_LLM,
    DEEPSEEK_CODER,
    FALCON,
    GPT2,
    STARCODER,
    QWEN2,
    QWEN35,
    PORO,
    VIKING,
    TEKKEN,
    GPT4O,
    SEED_CODER,
    UFAKZEKA,
    LAGUNA,
    MINICPM5,
    BAILINGMOE,
    GEMMA4,  // SentencePiece-style BPE: spaces as U+2581, raw UTF-8 (no byte-level map), <0xXX> byte fallback
};

// Token attributes (bit flags, numbered as llama.cpp's llama_token_attr).
enum TokenAttr : uint32_t {
    ATTR_UNDEFINED = 0,
    ATTR_UNKNOWN = 1u << 0,
    ATTR_UNUSED = 1u << 1,
    ATTR_NORMAL = 1u << 2,
    ATTR_CONTROL = 1u << 3,
    ATTR_USER_DEFINED = 1u << 4,
    ATTR_BYTE = 1u << 5,
    ATTR_NORMALIZED = 1u << 6,
    ATTR_LSTRIP = 1u << 7,
    ATTR_RSTRIP = 1u << 8,
    ATTR_SINGLE_WORD = 1u << 9,
};

struct TokenData {
    std::string text;
    float score = 0.0f;
    uint32_t attr = ATTR_NORMAL;
};

// Hash and equality that let unordered maps keyed by std::string be searched with a string_view. The call
// operator is deliberately not noexcept: libstdc++ then caches hash codes in the nodes, as it does for
// std::hash<std::string>, instead of rehashing keys while it walks a bucket.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class Vocab {
  public:
    // Reads `tokenizer.ggml.*` from a parsed GGUF file. Throws Error(BASALT_ERR_FORMAT) naming the file and
    // the key for a missing or inconsistent vocabulary, Error(BASALT_ERR_UNSUPPORTED) for an unknown
    // tokenizer model or pre-tokenizer.
    static Vocab load(const gguf::File& file);

    VocabType type = VocabType::SPM;
    PreType pre_type = PreType::DEFAULT;
    std::string model_name;  // tokenizer.ggml.model
    std::string pre_name;    // tokenizer.ggml.pre ("" when absent)
    std::string source;      // the file, for messages

    std::vector<TokenData> tokens;
    StringMap token_to_id;
    StringMap bpe_ranks;  // "left right" -> merge rank (first occurrence wins)
    size_t max_token_len = 0;

    int32_t bos = kTokenNull;
    int32_t eos = kTokenNull;
    int32_t eot = kTokenNull;
    int32_t eom = kTokenNull;
    int32_t unk = kTokenNull;
    int32_t sep = kTokenNull;
    int32_t pad = kTokenNull;
    int32_t mask = kTokenNull;
    int32_t fim_pre = kTokenNull;
    int32_t fim_suf = kTokenNull;
    int32_t fim_mid = kTokenNull;
    int32_t fim_pad = kTokenNull;
    int32_t fim_rep = kTokenNull;
    int32_t fim_sep = kTokenNull;

    bool add_space_prefix = false;
    bool add_bos = false;
    bool add_eos = false;
    bool add_sep = false;
    bool ignore_merges = false;
    bool clean_spaces = false;  // clean_up_tokenization_spaces when detokenizing
    bool remove_extra_whitespaces = false;
    bool escape_whitespaces = true;
    bool treat_whitespace_as_suffix = false;
    bool lowercase = true;  // BERT normaliser
    bool strip_accents = true;

    std::vector<uint8_t> precompiled_charsmap;  // Unigram normaliser (XCDA + replacement strings), may be empty

    // Control, user-defined and unknown tokens, longest text first (the order special text is split out).
    std::vector<int32_t> special_tokens;
    // Tokens that end generation.
    std::set<int32_t> eog;

    size_t size() const noexcept { return tokens.size(); }
    // Heap bytes the tables hold (token texts and attributes, the text and merge maps, the special lists).
    uint64_t host_bytes() const noexcept;
    bool valid(int32_t id) const noexcept { return id >= 0 && static_cast<size_t>(id) < tokens.size(); }
    uint32_t attr(int32_t id) const noexcept { return tokens[static_cast<size_t>(id)].attr; }
    // Id of a token text, or kTokenNull.
    int32_t find(std::string_view text) const noexcept;
    // Rank of the merge (left, right), or -1.
    int32_t bpe_rank(std::string_view left, std::string_view right) const;
    // Token for a raw byte: `<0xXX>` (or the one-byte text) for SPM/UGM, the byte-level character for BPE;
    // kTokenNull when the vocabulary has none.
    int32_t byte_to_token(uint8_t byte) const;
    // The byte of a BYTE token (`<0xXX>`).
    uint8_t token_to_byte(int32_t id) const;
};

}  // namespace basalt
