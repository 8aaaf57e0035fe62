// The regex pre-tokenizer of byte-level BPE vocabularies: splits text into words with PCRE2 (UTF + UCP) the
// way llama.cpp's unicode_regex_split does. Each pattern of a list cuts every piece left by the previous one
// into its matches and the unmatched text between them (both kept), so a pattern only has to say where
// boundaries are. Matching follows llama.cpp's semantics, which differ from plain PCRE2 in a few places:
//   - `\s` is ASCII whitespace (space, \t \n \v \f \r) and every non-ASCII White_Space character is seen as
//     \v, so a literal like U+3000 in a class never matches the ideographic space;
//   - `\d` is [0-9], `\p{Lu}`/`\p{Ll}`/`\p{Lt}`/`\p{Lm}`/`\p{Lo}` all mean \p{L} (llama.cpp collapses them);
//   - `$` matches only at the end of the piece being split, and lookarounds do not see past the piece;
//   - invalid UTF-8 becomes U+FFFD (one per bad byte) before splitting.
// Thread-safe: split() may be called concurrently on one instance.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.hpp"

namespace basalt {

class PreTokenizer {
  public:
    // Compiles the patterns of a pre-tokenizer type. Throws Error(BASALT_ERR_INTERNAL) if one does not compile.
    explicit PreTokenizer(PreType type);
    // Compiles explicit patterns (applied in order). Throws Error(BASALT_ERR_INVALID_ARGUMENT) for a pattern
    // PCRE2 rejects or that uses a construct this translation does not support.
    explicit PreTokenizer(const std::vector<std::string>& patterns);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // The words of text, as UTF-8 (re-encoded from the decoded code points).
    std::vector<std::string> split(std::string_view text) const;

    // The split patterns llama.cpp uses for a pre-tokenizer type (in its regex dialect).
    static std::vector<std::string> patterns(PreType type);

  private:
    struct Regex;
    std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace basalt
