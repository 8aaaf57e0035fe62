// Text <-> token ids for a model, built from the vocabulary in its GGUF metadata and matching llama.cpp's
// llama_tokenize / llama_token_to_piece / llama_detokenize exactly for the supported vocabularies: SentencePiece
// BPE ("llama"), byte-level BPE ("gpt2") with its pre-tokenizers, WordPiece ("bert") and Unigram ("t5").
//
// A Tokenizer owns its vocabulary and is immutable after create(); all methods are const and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.hpp"

namespace basalt {

namespace gguf {
class File;
}
namespace detail {
class TokenizerModel;
}

class Tokenizer {
  public:
    // Builds the tokenizer of a GGUF file. Throws Error(BASALT_ERR_FORMAT) for a missing or inconsistent
    // vocabulary and Error(BASALT_ERR_UNSUPPORTED) for an unknown tokenizer model or pre-tokenizer, naming the
    // file, the key and the value.
    static std::unique_ptr<Tokenizer> create(const gguf::File& file);
    // Builds the tokenizer of an already loaded vocabulary.
    explicit Tokenizer(Vocab vocab);
    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // Token ids of UTF-8 text (invalid bytes are read as U+FFFD).
    //   add_special:   add BOS / EOS (and BERT's CLS / SEP) as the vocabulary asks (add_bos_token, ...).
    //   parse_special: text equal to a control or unknown token becomes that token; otherwise only
    //                  user-defined tokens are split out and "<s>" is tokenized as plain text.
    std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;

    // The text of one token. `special` renders control and unknown tokens (otherwise they give "").
    // Throws Error(BASALT_ERR_INVALID_ARGUMENT) for an id outside the vocabulary.
    std::string token_to_piece(int32_t id, bool special) const;

    // The text of a token sequence, with llama.cpp's rules: SPM drops the space prefix of the first token;
    // remove_special drops a leading BOS / trailing EOS the vocabulary adds; unparse_special renders control
    // tokens; vocabularies with clean_up_tokenization_spaces (gpt2-style BPE, BERT) remove the space before
    // ? ! . , and in " 's" " 'm" " 're" " 've". Throws Error(BASALT_ERR_INVALID_ARGUMENT) for a bad id.
    std::string detokenize(const std::vector<int32_t>& tokens, bool remove_special, bool unparse_special) const;

    size_t n_vocab() const noexcept { return vocab_.size(); }
    // Heap bytes this tokenizer holds: the vocabulary's tables, the rendered pieces, the algorithm's own tables.
    uint64_t host_bytes() const noexcept;
    VocabType type() const noexcept { return vocab_.type; }
    const Vocab& vocab() const noexcept { return vocab_; }

    // Special token ids; kTokenNull (-1) when the vocabulary has none.
    int32_t bos() const noexcept { return vocab_.bos; }
    int32_t eos() const noexcept { return vocab_.eos; }
    int32_t eot() const noexcept { return vocab_.eot; }
    int32_t eom() const noexcept { return vocab_.eom; }
    int32_t unk() const noexcept { return vocab_.unk; }
    int32_t sep() const noexcept { return vocab_.sep; }
    int32_t pad() const noexcept { return vocab_.pad; }
    int32_t mask() const noexcept { return vocab_.mask; }
    int32_t nl() const noexcept { return nl_; }
    int32_t fim_pre() const noexcept { return vocab_.fim_pre; }
    int32_t fim_suf() const noexcept { return vocab_.fim_suf; }
    int32_t fim_mid() const noexcept { return vocab_.fim_mid; }
    bool add_bos() const noexcept { return vocab_.add_bos; }
    bool add_eos() const noexcept { return vocab_.add_eos; }
    bool add_sep() const noexcept { return vocab_.add_sep; }

    // Whether a token ends generation (EOS, EOT, "<|im_end|>", ...); false for ids outside the vocabulary.
    bool is_eog(int32_t id) const noexcept { return vocab_.eog.count(id) != 0; }
    // Attributes (TokenAttr bits) and text of a token; throw Error(BASALT_ERR_INVALID_ARGUMENT) for a bad id.
    uint32_t token_attr(int32_t id) const;
    const std::string& token_text(int32_t id) const;
    float token_score(int32_t id) const;

  private:
    struct Fragment {
        int32_t token;  // kTokenNull for text
        size_t offset;
        size_t length;
    };
    std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
    std::string piece_for_cache(int32_t id) const;
    void check_id(int32_t id) const;

    Vocab vocab_;
    std::unique_ptr<detail::TokenizerModel> model_;
    std::vector<std::string> pieces_;  // token_to_piece(id, special = true)
    int32_t nl_ = kTokenNull;
};

}  // namespace basalt
