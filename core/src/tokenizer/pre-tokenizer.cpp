#include "tokenizer/pre-tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "support/error.hpp"
#include "tokenizer/unicode.hpp"

namespace basalt {

namespace {

// Split patterns per pre-tokenizer, as llama.cpp lists them (its regex dialect; translated below). Non-ASCII
// literals are written as \x{...} so the sources stay unambiguous.
const char* const kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
const char* const kContractions = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))re";
const char* const kCjk = R"re([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re";
// Poro / Bloom / Viking: everything but whitespace and a few (also CJK / Indic / Arabic) punctuation marks.
const char* const kPoro = R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)re";
// DeepSeek LLM's letters: the cased letters (Lu, Ll, Lt) of the Unicode version its tokenizer was made with.
const char* const kDeepseekLetters =
    R"re(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})re"
    R"re(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})re"
    R"re(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})re"
    R"re(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})re"
    R"re(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})re"
    R"re(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})re"
    R"re(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})re"
    R"re(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})re"
    R"re(\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})re"
    R"re(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})re"
    R"re(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})re"
    R"re(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})re"
    R"re(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)re";

std::string join(std::initializer_list<const char*> parts) {
    std::string s;
    for (const char* p : parts) s += p;
    return s;
}

// ASCII whitespace as C++ std::regex's `\s` sees it (non-ASCII whitespace is mapped to \v before matching).
constexpr const char* kSpaceRanges = R"(\x{9}-\x{D}\x{20})";

// Rewrites a pattern from llama.cpp's dialect into PCRE2 syntax with the same meaning on the proxy text.
std::string translate(const std::string& pattern) {
    std::string out;
    out.reserve(pattern.size() + 32);
    bool in_class = false;
    size_t class_start = 0;  // index of the first member of the current class
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c != '\\') {
            if (!in_class && c == '[') {
                in_class = true;
                out += c;
                if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
                class_start = i + 1;
                continue;
            }
            if (in_class && c == ']' && i != class_start) in_class = false;
            out += c;
            continue;
        }
        if (i + 1 >= pattern.size()) fail(BASALT_ERR_INVALID_ARGUMENT, "pattern '{}' ends with a backslash", pattern);
        const char e = pattern[++i];
        switch (e) {
            case 's':
                out += in_class ? fmt::format("{}", kSpaceRanges) : fmt::format("[{}]", kSpaceRanges);
                break;
            case 'd':
                out += in_class ? "0-9" : "[0-9]";
                break;
            case 'S':
            case 'D':
                if (in_class) {
                    fail(BASALT_ERR_INVALID_ARGUMENT, "pattern '{}': \\{} inside a character class is not supported",
                         pattern, e);
                }
                out += e == 'S' ? fmt::format("[^{}]", kSpaceRanges) : std::string("[^0-9]");
                break;
            case 'p':
            case 'P': {
                const size_t close = pattern.find('}', i);
                if (i + 1 >= pattern.size() || pattern[i + 1] != '{' || close == std::string::npos) {
                    fail(BASALT_ERR_INVALID_ARGUMENT, "pattern '{}': malformed \\{} at offset {}", pattern, e, i - 1);
                }
                std::string_view name = std::string_view(pattern).substr(i + 2, close - i - 2);
                // llama.cpp collapses the letter subcategories into \p{L}.
                if (name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" || name == "Lo") name = "L";
                out += '\\';
                out += e;
                out += '{';
                out += name;
                out += '}';
                i = close;
                break;
            }
            default:
                out += '\\';
                out += e;
                break;
        }
    }
    return out;
}

struct MatchData {
    pcre2_match_data* md;
    explicit MatchData(const pcre2_code* code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {
        if (md == nullptr) throw std::bad_alloc();
    }
    ~MatchData() { pcre2_match_data_free(md); }
    MatchData(const MatchData&) = delete;
    MatchData& operator=(const MatchData&) = delete;
};

// Room for pathological inputs (one very long word): created only after a match hit PCRE2's default JIT
// stack (32 KiB) or heap (20 MiB) limit, then used for the rest of the call.
class MatchLimits {
  public:
    MatchLimits() = default;
    ~MatchLimits() {
        pcre2_jit_stack_free(stack_);
        pcre2_match_context_free(context_);
    }
    MatchLimits(const MatchLimits&) = delete;
    MatchLimits& operator=(const MatchLimits&) = delete;

    pcre2_match_context* context() const { return context_; }
    // Returns false when the limits were already raised.
    bool raise() {
        if (context_ != nullptr) return false;
        context_ = pcre2_match_context_create(nullptr);
        stack_ = pcre2_jit_stack_create(1 << 20, 1 << 30, nullptr);
        if (context_ == nullptr || stack_ == nullptr) throw std::bad_alloc();
        pcre2_jit_stack_assign(context_, nullptr, stack_);
        pcre2_set_heap_limit(context_, 1u << 22);  // KiB
        return true;
    }

  private:
    pcre2_match_context* context_ = nullptr;
    pcre2_jit_stack* stack_ = nullptr;
};

}  // namespace

struct PreTokenizer::Regex {
    std::string source;
    pcre2_code* code = nullptr;
    ~Regex() { pcre2_code_free(code); }
};

std::vector<std::string> PreTokenizer::patterns(PreType type) {
    const std::string gpt2 = kGpt2;
    const std::string qwen2 = join({kContractions, R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})re",
                                    R"re(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"});
    switch (type) {
        case PreType::DEFAULT:
            return {R"re([\p{P}\$\+<=>\^~\|]+)re", gpt2, R"re(\p{N}+)re", "[0-9][0-9][0-9]"};
        case PreType::LLAMA3:
            return {join({kContractions, R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})re",
                          R"re(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"})};
        case PreType::DEEPSEEK_LLM:
            return {R"re([\r\n])re",
                    kDeepseekLetters,
                    R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re",
                    R"re(\s+$)re",
                    kCjk,
                    R"re(\p{N}+)re"};
        case PreType::DEEPSEEK_CODER:
            return {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kCjk, R"re(\p{N})re"};
        case PreType::FALCON:
            return {R"re([\p{P}\$\+<=>\^~\|`]+)re", gpt2, "[0-9][0-9][0-9]"};
        case PreType::GPT2:
            return {gpt2};
        case PreType::STARCODER:
            return {R"re(\p{N})re", gpt2};
        case PreType::QWEN2:
            return {qwen2};
        case PreType::QWEN35:
            return {join({kContractions, R"re(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N})re",
                          R"re(| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"})};
        case PreType::PORO:
            return {kPoro};
        case PreType::VIKING:
            return {kPoro, R"re(\p{N})re"};
        case PreType::TEKKEN:
            return {R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)re"
                    R"re(|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)re"
                    R"re(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"};
        case PreType::GPT4O:
            return {join({R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)re", kContractions,
                          R"re(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)re", kContractions,
                          R"re(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"})};
        case PreType::SEED_CODER:
            return {join({kContractions, R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1})re",
                          R"re(| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re"})};
        case PreType::UFAKZEKA:
            return {R"re([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"};
        case PreType::LAGUNA:
            return {R"re([^\n]+|[\n]+)re", qwen2};
        case PreType::MINICPM5:
            return {R"re(\p{N}{1,3})re", join({kContractions, R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+)re",
                                               R"re(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"})};
        case PreType::GEMMA4:
            return {R"re([^\n]+|[\n]+)re"};  // merges run over whole lines; only newlines split
        case PreType::BAILINGMOE:
            return {R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})re"
                    R"re(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re"};
    }
    return {gpt2};
}

PreTokenizer::PreTokenizer(PreType type) : PreTokenizer(patterns(type)) {}

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns) {
    for (const auto& p : patterns) {
        auto r = std::make_unique<Regex>();
        r->source = p;
        const std::string translated = translate(p);
        int error = 0;
        PCRE2_SIZE error_offset = 0;
        r->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error, &error_offset, nullptr);
        if (r->code == nullptr) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof(message));
            fail(BASALT_ERR_INVALID_ARGUMENT, "pre-tokenizer pattern '{}' does not compile (as '{}'): {} at offset {}",
                 p, translated, reinterpret_cast<const char*>(message), error_offset);
        }
        pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE);  // optional speed-up; the interpreter is the fallback
        regexes_.push_back(std::move(r));
    }
}

PreTokenizer::~PreTokenizer() = default;

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
    const std::vector<uint32_t> cpts = unicode::decode_utf8(text);
    const size_t n = cpts.size();
    if (n == 0) return {};

    // The text the patterns run on: non-ASCII whitespace becomes \v (what llama.cpp's std::regex sees) and
    // surrogates, which PCRE2 cannot take, become a private-use character (both are "other" to the patterns).
    std::string proxy;
    proxy.reserve(text.size() + 8);
    std::vector<size_t> cpt_byte(n + 1);
    for (size_t i = 0; i < n; ++i) {
        cpt_byte[i] = proxy.size();
        uint32_t c = cpts[i];
        if (c >= 0x80 && unicode::is_whitespace(c)) c = 0x0B;
        if (c >= 0xD800 && c <= 0xDFFF) c = 0xE000;
        unicode::append_utf8(proxy, c);
    }
    cpt_byte[n] = proxy.size();
    std::vector<uint32_t> byte_cpt(proxy.size() + 1, 0);
    for (size_t i = 0; i <= n; ++i) byte_cpt[cpt_byte[i]] = static_cast<uint32_t>(i);

    std::vector<std::pair<size_t, size_t>> pieces{{0, n}};  // code point ranges
    MatchLimits limits;
    for (const auto& re : regexes_) {
        MatchData data(re->code);
        std::vector<std::pair<size_t, size_t>> next;
        next.reserve(pieces.size() * 2);
        for (const auto& [first, last] : pieces) {
            const size_t base = cpt_byte[first];
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(proxy.data() + base);
            const size_t length = cpt_byte[last] - base;
            const auto emit = [&](size_t a, size_t b) {
                if (b > a) next.emplace_back(byte_cpt[base + a], byte_cpt[base + b]);
            };
            size_t done = 0;   // end of the last match (bytes into the piece)
            size_t start = 0;  // where the next search starts
            uint32_t options = 0;
            while (start <= length) {
                const auto match = [&] {
                    return pcre2_match(re->code, subject, length, start, options | PCRE2_NO_UTF_CHECK, data.md,
                                       limits.context());
                };
                int rc = match();
                if ((rc == PCRE2_ERROR_JIT_STACKLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) && limits.raise()) rc = match();
                if (rc == PCRE2_ERROR_NOMATCH) {
                    if (options == 0 || start >= length) break;
                    // After an empty match, retry one character further on (as std::regex_iterator does).
                    start += unicode::utf8_len(subject[start]);
                    options = 0;
                    continue;
                }
                if (rc < 0) {
                    PCRE2_UCHAR message[256];
                    pcre2_get_error_message(rc, message, sizeof(message));
                    fail(BASALT_ERR_INTERNAL, "pre-tokenizer pattern '{}' failed: {}", re->source,
                         reinterpret_cast<const char*>(message));
                }
                const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
                const size_t match_begin = ov[0];
                const size_t match_end = ov[1];
                emit(done, match_begin);  // unmatched text before the match is a piece of its own
                emit(match_begin, match_end);
                done = match_end;
                start = match_end;
                options = match_end == match_begin ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
            }
            emit(done, length);
        }
        pieces = std::move(next);
    }

    std::vector<std::string> words;
    words.reserve(pieces.size());
    for (const auto& [first, last] : pieces) {
        std::string w;
        for (size_t i = first; i < last; ++i) unicode::append_utf8(w, cpts[i]);
        words.push_back(std::move(w));
    }
    return words;
}

}  // namespace basalt
