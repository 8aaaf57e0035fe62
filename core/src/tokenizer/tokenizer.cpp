#include "tokenizer/tokenizer.hpp"

#include <cctype>

#include "model/gguf.hpp"
#include "support/error.hpp"
#include "support/heap-bytes.hpp"
#include "tokenizer/tokenizer-models.hpp"
#include "tokenizer/unicode.hpp"

namespace basalt {

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's escaped space

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    if (from.empty()) return;
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(s, pos, hit - pos).append(to);
    }
    out.append(s, pos, std::string::npos);
    s = std::move(out);
}

bool is_space(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// Byte-level BPE token text back to bytes; a character outside the byte map is kept visible as llama.cpp does.
std::string decode_byte_level(const std::string& text) {
    std::string out;
    for (const uint32_t cpt : unicode::decode_utf8(text)) {
        const int byte = unicode::bpe_char_to_byte(cpt);
        if (byte >= 0) {
            out.push_back(static_cast<char>(byte));
            continue;
        }
        out += "[UNK_BYTE_0x";
        for (const char c : unicode::to_utf8(cpt)) out += fmt::format("{:02x}", static_cast<uint8_t>(c));
        out += text;
        out += ']';
    }
    return out;
}

// clean_up_tokenization_spaces, in place and pass by pass exactly as llama.cpp's detokenize.
void clean_spaces(std::string& t) {
    // " ?" " !" " ." " ,"  ->  "?" "!" "." ","
    size_t n = t.size();
    size_t total = n ? 1 : 0;
    for (size_t i = 1; i < n; ++i) {
        const char x = t[i];
        if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
        t[total++] = x;
    }
    // " ' "  ->  "'"
    n = total;
    total = n ? 1 : 0;
    for (size_t i = 1; i < n; ++i) {
        const char x = t[i];
        if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
            --total;
            t[++i] = '\0';
        }
        t[total++] = x;
    }
    // " 's" " 'm" " 're" " 've"  ->  "'s" "'m" "'re" "'ve"  (" 't" " 'd" " 'll" are kept)
    n = total;
    total = n ? 1 : 0;
    for (size_t i = 1; i < n; ++i) {
        const char x = t[i];
        if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            const char x1 = t[i + 1];
            if (x1 == 's' || x1 == 'm') {
                --total;
            } else if (x1 != 't' && x1 != 'd' && i + 2 < n) {
                const char x2 = t[i + 2];
                if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
            }
        }
        t[total++] = x;
    }
    t.resize(total);
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::create(const gguf::File& file) {
    return std::make_unique<Tokenizer>(Vocab::load(file));
}

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
    switch (vocab_.type) {
        case VocabType::SPM:
            model_ = detail::make_spm_model(vocab_);
            break;
        case VocabType::BPE:
            model_ = detail::make_bpe_model(vocab_);
            break;
        case VocabType::WPM:
            model_ = detail::make_wpm_model(vocab_);
            break;
        case VocabType::UGM:
            model_ = detail::make_ugm_model(vocab_);
            break;
    }

    // The newline token: SPM's <0x0A>, WPM's pad, else whatever "\n" tokenizes to (pad when nothing).
    switch (vocab_.type) {
        case VocabType::SPM: {
            const int32_t id = vocab_.byte_to_token('\n');
            nl_ = id != kTokenNull ? id : vocab_.pad;
            break;
        }
        case VocabType::WPM:
            nl_ = vocab_.pad;
            break;
        default: {
            std::vector<int32_t> ids;
            model_->encode("\n", ids);
            nl_ = ids.empty() ? vocab_.pad : ids.front();
            break;
        }
    }

    pieces_.reserve(vocab_.size());
    for (size_t id = 0; id < vocab_.size(); ++id) pieces_.push_back(piece_for_cache(static_cast<int32_t>(id)));
}

Tokenizer::~Tokenizer() = default;

uint64_t Tokenizer::host_bytes() const noexcept {
    return vocab_.host_bytes() + heap::of(pieces_) + model_->host_bytes();
}

void Tokenizer::check_id(int32_t id) const {
    if (!vocab_.valid(id)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "token id {} is outside the vocabulary (0..{})", id, vocab_.size() - 1);
    }
}

uint32_t Tokenizer::token_attr(int32_t id) const {
    check_id(id);
    return vocab_.attr(id);
}

const std::string& Tokenizer::token_text(int32_t id) const {
    check_id(id);
    return vocab_.tokens[static_cast<size_t>(id)].text;
}

float Tokenizer::token_score(int32_t id) const {
    check_id(id);
    return vocab_.tokens[static_cast<size_t>(id)].score;
}

std::vector<Tokenizer::Fragment> Tokenizer::partition(std::string_view text, bool parse_special) const {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({kTokenNull, 0, text.size()});
    for (const int32_t id : vocab_.special_tokens) {
        const TokenData& token = vocab_.tokens[static_cast<size_t>(id)];
        // Without parse_special only user-defined tokens are split out (as HF tokenizers do).
        if (!parse_special && (token.attr & (ATTR_CONTROL | ATTR_UNKNOWN))) continue;
        const std::string& needle = token.text;
        std::vector<Fragment> next;
        next.reserve(fragments.size() + 2);
        for (const Fragment& f : fragments) {
            if (f.token != kTokenNull) {
                next.push_back(f);
                continue;
            }
            size_t offset = f.offset;
            size_t length = f.length;
            while (length > 0) {
                const size_t match = text.substr(0, offset + length).find(needle, offset);
                if (match == std::string_view::npos) {
                    next.push_back({kTokenNull, offset, length});
                    break;
                }
                size_t left = match - offset;
                if (token.attr & ATTR_LSTRIP) {
                    while (left > 0 && is_space(text[offset + left - 1])) --left;
                }
                if (left > 0) next.push_back({kTokenNull, offset, left});
                next.push_back({id, 0, 0});
                size_t right_offset = match + needle.size();
                size_t right_length = offset + length - right_offset;
                if (token.attr & ATTR_RSTRIP) {
                    while (right_length > 0 && is_space(text[right_offset])) {
                        ++right_offset;
                        --right_length;
                    }
                }
                offset = right_offset;
                length = right_length;
            }
        }
        fragments = std::move(next);
    }
    return fragments;
}

std::vector<int32_t> Tokenizer::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<int32_t> out;
    const std::vector<Fragment> fragments = partition(text, parse_special);
    const auto fragment_text = [&](const Fragment& f) { return std::string(text.substr(f.offset, f.length)); };

    switch (vocab_.type) {
        case VocabType::SPM: {
            if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
            bool prev_special = true;  // the first fragment gets the space prefix
            for (const Fragment& f : fragments) {
                if (f.token != kTokenNull) {
                    out.push_back(f.token);
                    prev_special = true;
                    continue;
                }
                std::string t = (vocab_.add_space_prefix && prev_special) ? " " : "";
                t += fragment_text(f);
                replace_all(t, " ", kSpaceMarker);
                model_->encode(t, out);
                prev_special = false;
            }
            if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
            break;
        }
        case VocabType::BPE: {
            if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
            for (const Fragment& f : fragments) {
                if (f.token != kTokenNull) {
                    out.push_back(f.token);
                    continue;
                }
                std::string t = fragment_text(f);
                if (vocab_.escape_whitespaces) replace_all(t, " ", kSpaceMarker);
                model_->encode(t, out);
            }
            if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
            break;
        }
        case VocabType::WPM: {
            // BERT always wraps the text in CLS ... SEP when special tokens are asked for.
            if (add_special && vocab_.bos != kTokenNull) out.push_back(vocab_.bos);
            for (const Fragment& f : fragments) {
                if (f.token != kTokenNull) {
                    out.push_back(f.token);
                } else {
                    model_->encode(fragment_text(f), out);
                }
            }
            if (add_special && vocab_.sep != kTokenNull) out.push_back(vocab_.sep);
            break;
        }
        case VocabType::UGM: {
            if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
            for (const Fragment& f : fragments) {
                if (f.token != kTokenNull) {
                    out.push_back(f.token);
                } else {
                    model_->encode(fragment_text(f), out);
                }
            }
            if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
            break;
        }
    }
    return out;
}

std::string Tokenizer::piece_for_cache(int32_t id) const {
    const TokenData& t = vocab_.tokens[static_cast<size_t>(id)];
    const uint32_t attr = t.attr;
    if (attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED)) return t.text;
    if (attr & ATTR_NORMAL) {
        if (vocab_.type == VocabType::BPE && !vocab_.escape_whitespaces) return decode_byte_level(t.text);
        std::string s = t.text;
        replace_all(s, kSpaceMarker, " ");
        return s;
    }
    if ((attr & ATTR_BYTE) && vocab_.type != VocabType::WPM) return std::string(1, char(vocab_.token_to_byte(id)));
    return {};  // undefined / unused tokens render as nothing
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
    check_id(id);
    if (!special && (vocab_.attr(id) & (ATTR_UNKNOWN | ATTR_CONTROL))) return {};
    return pieces_[static_cast<size_t>(id)];
}

std::string Tokenizer::detokenize(const std::vector<int32_t>& tokens, bool remove_special, bool unparse_special) const {
    for (const int32_t id : tokens) check_id(id);
    size_t first = 0;
    size_t last = tokens.size();
    bool remove_space = vocab_.add_space_prefix;  // SPM: drop the prefix space of the first piece
    if (remove_special && vocab_.add_bos && last > first && tokens[first] == vocab_.bos) {
        remove_space = false;
        ++first;
    }
    if (remove_special && vocab_.add_eos && last > first && tokens[last - 1] == vocab_.eos) --last;

    std::string text;
    for (size_t i = first; i < last; ++i) {
        const int32_t id = tokens[i];
        if (!unparse_special && (vocab_.attr(id) & (ATTR_UNKNOWN | ATTR_CONTROL))) {
            remove_space = false;
            continue;
        }
        std::string_view piece = pieces_[static_cast<size_t>(id)];
        if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
        remove_space = false;
        text.append(piece);
    }
    if (vocab_.clean_spaces) clean_spaces(text);
    return text;
}

}  // namespace basalt
