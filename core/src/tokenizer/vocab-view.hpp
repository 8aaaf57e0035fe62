// The model's vocabulary as samplers see it through the ABI (basalt_vocab_view): each token's output bytes and its
// flags, with a fingerprint of both. Built once per tokenizer; immutable afterwards, safe to share between threads.
#pragma once

#include <basalt/plugin_sampler.h>

#include <cstdint>
#include <string>
#include <vector>

namespace basalt {

class Tokenizer;

class VocabView {
  public:
    // Token texts are token_to_piece(id, special = false): what the token adds to the output (control tokens and
    // unknown ones add nothing); EOG and control tokens are flagged.
    explicit VocabView(const Tokenizer& tokenizer);
    VocabView(const VocabView&) = delete;
    VocabView& operator=(const VocabView&) = delete;

    // The ABI view; points into this object, valid while it lives.
    const basalt_vocab_view* view() const { return &view_; }

  private:
    std::vector<std::string> texts_;
    std::vector<const char*> ptrs_;
    std::vector<size_t> lens_;
    std::vector<uint32_t> flags_;
    basalt_vocab_view view_{};
};

}  // namespace basalt
