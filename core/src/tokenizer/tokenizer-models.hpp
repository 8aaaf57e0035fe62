// The tokenization algorithms behind basalt::Tokenizer, one per vocabulary family (tokenizer-spm.cpp,
// tokenizer-bpe.cpp, tokenizer-wpm.cpp, tokenizer-ugm.cpp). Each turns one fragment of plain text (special
// tokens already split out, SPM space prefix and escaping already applied) into token ids. Internal to the
// core; a model borrows the Vocab it was made from, which must outlive it. encode() is const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.hpp"

namespace basalt::detail {

class TokenizerModel {
  public:
    virtual ~TokenizerModel() = default;
    // Appends the ids of `text` to `out`.
    virtual void encode(std::string_view text, std::vector<int32_t>& out) const = 0;
    // Heap bytes of the algorithm's own tables (beyond the vocabulary it borrows).
    virtual uint64_t host_bytes() const noexcept { return 0; }
};

std::unique_ptr<TokenizerModel> make_spm_model(const Vocab& vocab);
std::unique_ptr<TokenizerModel> make_bpe_model(const Vocab& vocab);
std::unique_ptr<TokenizerModel> make_wpm_model(const Vocab& vocab);
std::unique_ptr<TokenizerModel> make_ugm_model(const Vocab& vocab);

}  // namespace basalt::detail
