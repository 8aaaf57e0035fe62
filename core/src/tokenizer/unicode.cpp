#include "tokenizer/unicode.hpp"

#include <algorithm>
#include <array>

namespace basalt::unicode {

uint16_t flags(uint32_t cpt) noexcept {
    if (cpt > kMaxCodepoint) return 0;
    const auto* begin = detail::kFlagRanges;
    const auto* end = detail::kFlagRanges + detail::kFlagRangesCount;
    // The last range whose start is <= cpt (the table starts at 0).
    const auto* it =
        std::upper_bound(begin, end, cpt, [](uint32_t c, const detail::FlagRange& r) { return c < r.start; });
    return (it - 1)->flags;
}

uint32_t to_lower(uint32_t cpt) noexcept {
    const auto* begin = detail::kLowercase;
    const auto* end = detail::kLowercase + detail::kLowercaseCount;
    const auto* it =
        std::lower_bound(begin, end, cpt, [](const detail::CodepointPair& p, uint32_t c) { return p.from < c; });
    return (it != end && it->from == cpt) ? it->to : cpt;
}

uint32_t nfd_first(uint32_t cpt) noexcept {
    const auto* begin = detail::kNfdRanges;
    const auto* end = detail::kNfdRanges + detail::kNfdRangesCount;
    const auto* it =
        std::upper_bound(begin, end, cpt, [](uint32_t c, const detail::NfdRange& r) { return c < r.first; });
    if (it == begin) return cpt;
    --it;
    return cpt <= it->last ? it->nfd : cpt;
}

bool decode_utf8(std::string_view text, size_t& offset, uint32_t& cpt) noexcept {
    const size_t n = text.size();
    if (offset >= n) return false;
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
    const uint8_t lead = byte(offset);
    const auto cont = [&](size_t k) { return offset + k < n && (byte(offset + k) & 0xC0) == 0x80; };
    if (lead < 0x80) {
        cpt = lead;
        offset += 1;
        return true;
    }
    if ((lead & 0xE0) == 0xC0) {
        if (!cont(1)) return false;
        cpt = (uint32_t(lead & 0x1F) << 6) | (byte(offset + 1) & 0x3F);
        offset += 2;
        return true;
    }
    if ((lead & 0xF0) == 0xE0) {
        if (!cont(1) || !cont(2)) return false;
        cpt = (uint32_t(lead & 0x0F) << 12) | (uint32_t(byte(offset + 1) & 0x3F) << 6) | (byte(offset + 2) & 0x3F);
        offset += 3;
        return true;
    }
    if ((lead & 0xF8) == 0xF0) {
        if (!cont(1) || !cont(2) || !cont(3)) return false;
        const uint32_t c = (uint32_t(lead & 0x07) << 18) | (uint32_t(byte(offset + 1) & 0x3F) << 12) |
                           (uint32_t(byte(offset + 2) & 0x3F) << 6) | (byte(offset + 3) & 0x3F);
        // llama.cpp would decode this and then fail to encode it again; treat it as an invalid byte instead.
        if (c > kMaxCodepoint) return false;
        cpt = c;
        offset += 4;
        return true;
    }
    return false;  // a continuation byte or 0xF8..0xFF
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
    std::vector<uint32_t> out;
    out.reserve(text.size());
    size_t offset = 0;
    while (offset < text.size()) {
        uint32_t cpt = 0;
        if (decode_utf8(text, offset, cpt)) {
            out.push_back(cpt);
        } else {
            out.push_back(kReplacement);
            ++offset;
        }
    }
    return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
    if (cpt < 0x80) {
        out.push_back(static_cast<char>(cpt));
    } else if (cpt < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
        out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    } else if (cpt < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    } else {
        cpt = std::min(cpt, kMaxCodepoint);
        out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    }
}

std::string to_utf8(uint32_t cpt) {
    std::string s;
    append_utf8(s, cpt);
    return s;
}

namespace {

// GPT-2's byte encoder: printable Latin-1 bytes stand for themselves, the other 68 bytes are mapped in order
// to U+0100, U+0101, ...
struct ByteMap {
    std::array<uint32_t, 256> byte_to_cpt{};
    std::array<std::string, 256> byte_to_utf8;
    std::array<uint8_t, 68> shifted_to_byte{};  // byte for U+0100 + i
    ByteMap() {
        const auto printable = [](int b) {
            return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        };
        uint32_t next = 0x100;
        for (int b = 0; b < 256; ++b) {
            if (printable(b)) {
                byte_to_cpt[b] = static_cast<uint32_t>(b);
            } else {
                shifted_to_byte[next - 0x100] = static_cast<uint8_t>(b);
                byte_to_cpt[b] = next++;
            }
            byte_to_utf8[b] = to_utf8(byte_to_cpt[b]);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

}  // namespace

const std::string& byte_to_bpe_char(uint8_t byte) noexcept {
    return byte_map().byte_to_utf8[byte];
}

int bpe_char_to_byte(uint32_t cpt) noexcept {
    if (cpt < 0x100) {
        const bool printable = (cpt >= 0x21 && cpt <= 0x7E) || (cpt >= 0xA1 && cpt <= 0xAC) || (cpt >= 0xAE);
        return printable ? static_cast<int>(cpt) : -1;
    }
    const auto& shifted = byte_map().shifted_to_byte;
    return cpt - 0x100 < shifted.size() ? shifted[cpt - 0x100] : -1;
}

}  // namespace basalt::unicode
