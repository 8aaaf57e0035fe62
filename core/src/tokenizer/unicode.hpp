// Unicode helpers for the tokenizers: UTF-8 decoding and encoding with llama.cpp's rules (an invalid byte
// becomes U+FFFD and decoding resumes at the next byte), per-code-point category flags, simple lowercase,
// the first code point of the canonical decomposition (what llama.cpp's BERT normaliser uses), and the
// GPT-2 byte <-> printable-character map of byte-level BPE. All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace basalt::unicode {

// Category flags of a code point (one general-category bit, plus WHITESPACE for the White_Space property).
enum Flag : uint16_t {
    NUMBER = 1u << 1,       // \p{N}
    LETTER = 1u << 2,       // \p{L}
    SEPARATOR = 1u << 3,    // \p{Z}
    ACCENT_MARK = 1u << 4,  // \p{M}
    PUNCTUATION = 1u << 5,  // \p{P}
    SYMBOL = 1u << 6,       // \p{S}
    CONTROL = 1u << 7,      // \p{C} (includes unassigned, private use and surrogates)
    WHITESPACE = 1u << 8,   // White_Space
};

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr uint32_t kReplacement = 0xFFFD;

// Flags of a code point; 0 for values above U+10FFFF.
uint16_t flags(uint32_t cpt) noexcept;
inline bool is_whitespace(uint32_t cpt) noexcept {
    return (flags(cpt) & WHITESPACE) != 0;
}

// Simple lowercase mapping (first code point of the full lowercase), or cpt itself.
uint32_t to_lower(uint32_t cpt) noexcept;
// First code point of the canonical decomposition, or cpt itself.
uint32_t nfd_first(uint32_t cpt) noexcept;

// Length of the UTF-8 sequence announced by a lead byte (1 for continuation and invalid bytes), as llama.cpp
// counts when it cuts text into characters.
inline size_t utf8_len(uint8_t lead) noexcept {
    static constexpr uint8_t kLookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLookup[lead >> 4];
}

// Decodes the code point at `offset` and advances it. Returns false (offset unchanged) when the bytes there
// are not a complete sequence. Like llama.cpp it does not reject overlong forms or surrogates; values above
// U+10FFFF are rejected.
bool decode_utf8(std::string_view text, size_t& offset, uint32_t& cpt) noexcept;
// Decodes a whole string; each byte that does not start a valid sequence becomes U+FFFD.
std::vector<uint32_t> decode_utf8(std::string_view text);
// Appends the UTF-8 encoding of cpt (<= U+10FFFF; surrogates are encoded as three bytes, as llama.cpp does).
void append_utf8(std::string& out, uint32_t cpt);
std::string to_utf8(uint32_t cpt);

// Byte-level BPE (GPT-2): the printable character that stands for a byte, as UTF-8.
const std::string& byte_to_bpe_char(uint8_t byte) noexcept;
// The byte a byte-level BPE character stands for, or -1 when cpt is not one of the 256 characters.
int bpe_char_to_byte(uint32_t cpt) noexcept;

// Tables generated into unicode-data.cpp.
namespace detail {
struct FlagRange {
    uint32_t start;
    uint16_t flags;
};
struct CodepointPair {
    uint32_t from;
    uint32_t to;
};
struct NfdRange {
    uint32_t first;
    uint32_t last;
    uint32_t nfd;
};
extern const FlagRange kFlagRanges[];
extern const size_t kFlagRangesCount;
extern const CodepointPair kLowercase[];
extern const size_t kLowercaseCount;
extern const NfdRange kNfdRanges[];
extern const size_t kNfdRangesCount;
}  // namespace detail

}  // namespace basalt::unicode
