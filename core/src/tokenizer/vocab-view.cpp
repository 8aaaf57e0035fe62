// The sampler-facing vocabulary view (vocab-view.hpp).
#include "tokenizer/vocab-view.hpp"

#include "tokenizer/tokenizer.hpp"

namespace basalt {

VocabView::VocabView(const Tokenizer& tokenizer) {
    const size_t n = tokenizer.n_vocab();
    texts_.resize(n);
    ptrs_.resize(n);
    lens_.resize(n);
    flags_.resize(n);
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the texts, their lengths and flags
    auto mix = [&](uint64_t v) {
        h ^= v;
        h *= 1099511628211ull;
    };
    for (size_t i = 0; i < n; ++i) {
        const auto id = static_cast<int32_t>(i);
        texts_[i] = tokenizer.token_to_piece(id, false);
        uint32_t f = 0;
        if (tokenizer.is_eog(id)) f |= BASALT_VOCAB_TOKEN_EOG;
        if ((tokenizer.token_attr(id) & ATTR_CONTROL) != 0) f |= BASALT_VOCAB_TOKEN_CONTROL;
        flags_[i] = f;
        ptrs_[i] = texts_[i].data();
        lens_[i] = texts_[i].size();
        for (const char c : texts_[i]) mix(static_cast<unsigned char>(c));
        mix(0x100 + lens_[i]);
        mix(0x200 + f);
    }
    view_.struct_size = sizeof(view_);
    view_.n_tokens = n;
    view_.texts = ptrs_.data();
    view_.text_lens = lens_.data();
    view_.token_flags = flags_.data();
    view_.fingerprint = h;
}

}  // namespace basalt
