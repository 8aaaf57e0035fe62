// One byte of UTF-8 decoding as the grammar matcher sees it: a token may end inside a character, so the decoder
// keeps the partial character and says, for each byte, whether it is ASCII, leaves a character incomplete (with
// the range of code points it can still become) or completes one. Overlong forms, surrogates, code points past
// U+10FFFF and stray continuation bytes are refused. Shared by the matcher's step and the loop-token precompute so
// both decide byte sequences identically. Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>

namespace basalt::grammar {

// A partial character: value so far, continuation bytes still to come, the encoding's length (2..4).
struct Utf8Partial {
    uint32_t partial = 0;
    uint32_t remaining = 0;
    uint32_t length = 0;
};

enum class Utf8Step : uint8_t {
    Reject,    // not a prefix of any valid encoding
    Ascii,     // a complete one-byte character (cp = the byte)
    Partial,   // the character is still incomplete; it can become a code point in [lo, hi]
    Complete,  // the character is complete: cp
};

struct Utf8Result {
    Utf8Step kind = Utf8Step::Reject;
    uint32_t lo = 0, hi = 0, cp = 0;
};

// Advances u by byte. On Reject u is unspecified (callers drop it).
inline Utf8Result utf8_step(Utf8Partial& u, uint8_t byte) {
    Utf8Result r;
    if (u.remaining == 0) {
        if (byte < 0x80) {
            r.kind = Utf8Step::Ascii;
            r.cp = byte;
            return r;
        }
        if (byte >= 0xC2 && byte < 0xE0) {
            u.remaining = 1;
            u.partial = byte & 0x1Fu;
        } else if (byte >= 0xE0 && byte < 0xF0) {
            u.remaining = 2;
            u.partial = byte & 0x0Fu;
        } else if (byte >= 0xF0 && byte < 0xF5) {
            u.remaining = 3;
            u.partial = byte & 0x07u;
        } else {
            return r;  // a continuation byte without a lead, or an invalid lead
        }
        u.length = u.remaining + 1;
    } else {
        if ((byte & 0xC0) != 0x80) return r;
        u.partial = (u.partial << 6) | (byte & 0x3Fu);
        --u.remaining;
    }
    // The shortest form only (no overlong encodings), no surrogates, nothing past U+10FFFF.
    const uint32_t min_cp = u.length == 2 ? 0x80 : u.length == 3 ? 0x800 : 0x10000;
    if (u.remaining > 0) {
        const uint32_t shift = 6 * u.remaining;
        r.lo = std::max(u.partial << shift, min_cp);
        r.hi = std::min<uint32_t>((u.partial << shift) | ((1u << shift) - 1), 0x10FFFF);
        if (r.lo > r.hi || (r.lo >= 0xD800 && r.hi <= 0xDFFF)) return r;
        r.kind = Utf8Step::Partial;
        return r;
    }
    const uint32_t cp = u.partial;
    if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return r;
    u.partial = 0;
    u.length = 0;
    r.kind = Utf8Step::Complete;
    r.cp = cp;
    return r;
}

}  // namespace basalt::grammar
