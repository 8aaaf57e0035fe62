// libFuzzer target for the request path of basalt serve and basalt batch: untrusted JSON text into a validated
// request. The first byte chooses what the rest is: a /v1/completions body, a /v1/chat/completions body (with one
// of the chat template families, trusted special tokens or not), or a basalt batch line. Serve bodies go through
// parse_body then parse_completion / parse_chat (tools/basalt/serve/openai-request.hpp), which may succeed or throw
// ApiError, the one type the HTTP route catches. Batch lines go through the pieces of cmd-batch.cpp's line parser
// that live outside the CLI (its parse_job is internal to the CLI): the JSON-limit scan (json-limits.hpp),
// nlohmann's parser (json::exception is that line's error), the error excerpts and read_string_or_list
// (request-spec.hpp). Anything else escaping, a crash, a sanitizer report or a broken guarantee of an accepted
// request (checked below) is a bug. Built with -fsanitize=fuzzer (BASALT_FUZZ=ON) and, without libFuzzer, linked
// with replay-main.cpp to replay the corpus and crashers under CTest.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "json-limits.hpp"
#include "openai-request.hpp"
#include "request-spec.hpp"

namespace {

using namespace basalt;
using json = nlohmann::ordered_json;

constexpr uint32_t kVocab = 512;
constexpr uint32_t kCtx = 128;

[[noreturn]] void bug(const std::string& what) {
    std::fprintf(stderr, "fuzz-request: parser guarantee broken: %s\n", what.c_str());
    std::abort();
}

// A decoder spec's cache sequences, as a runtime would answer: "sample" and "greedy" need one, "beam:width=N"
// needs N; anything else is refused with std::invalid_argument (the parser turns it into an ApiError).
uint32_t fake_decoder_seqs(const std::string& spec) {
    if (spec == "sample" || spec == "greedy" || spec.rfind("sample:", 0) == 0) return 1;
    const std::string beam = "beam:width=";
    if (spec.rfind(beam, 0) == 0) {
        const std::string n = spec.substr(beam.size());
        if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos)
            throw std::invalid_argument("bad beam width '" + cli::excerpt(n) + "'");
        return static_cast<uint32_t>(std::stoul(n));
    }
    throw std::invalid_argument("unknown decoder '" + cli::excerpt(spec) + "'");
}

// The served model of mode byte `mode`: a fixed vocabulary and context, one of the six template families, special
// tokens trusted or not, a decoder check with a limit of 4 sequences (or none), two loaded control vectors.
serve::ServedModel model_for(uint8_t mode) {
    static const char* const kFamilies[] = {"plain", "chatml", "llama3", "gemma", "mistral", "phi3"};
    serve::ServedModel m;
    m.id = "fuzz";
    m.n_vocab = kVocab;
    m.n_ctx = kCtx;
    if (!serve::template_from_name(kFamilies[(mode / 3) % 6], m.chat)) bug("a family name is not recognised");
    if (m.chat.family != serve::TemplateFamily::Plain && m.chat.family != serve::TemplateFamily::Mistral)
        m.chat_stop_tokens = {2};
    m.trust_client_special_tokens = (mode & 0x40) != 0;
    if ((mode & 0x80) != 0) {
        m.decoder_seqs = fake_decoder_seqs;
        m.max_request_seqs = 4;
    }
    m.control_vectors = {"calm", "happy"};
    return m;
}

// Checks what an accepted request promises the engine and the exchange.
void check_request(const serve::GenerationRequest& g, const serve::ServedModel& m, bool chat) {
    if (g.chat != chat) bug("chat flag does not match the endpoint");
    if (g.prompts.empty()) bug("an accepted request without prompts");
    if (g.n < 1) bug("n below 1 accepted");
    if (g.logprobs < -1 || g.logprobs > 20) bug("logprobs outside -1..20 accepted");
    for (const auto& p : g.prompts) {
        for (const int32_t t : p.tokens)
            if (t < 0 || static_cast<uint32_t>(t) >= m.n_vocab) bug("token id outside the vocabulary accepted");
        if (p.prompt.size() > serve::kPromptBytesPerToken * m.n_ctx) bug("prompt over the byte bound accepted");
        if (p.max_tokens > static_cast<int32_t>(m.n_ctx)) bug("max_tokens past the context accepted");
        for (const auto& s : p.stop)
            if (s.empty()) bug("empty stop string accepted");
    }
    if (chat) {
        if (g.prompts.size() != 1) bug("a chat request with other than one prompt");
        if (m.trust_client_special_tokens != g.chat_pieces.empty()) bug("chat pieces do not match the trust setting");
        std::string joined;
        for (const auto& piece : g.chat_pieces) joined += piece.text;
        if (!g.chat_pieces.empty() && joined != g.prompts[0].prompt) bug("chat pieces do not spell the prompt");
    }
    // The answer path: an error object and excerpts of every accepted value must be producible.
    (void)serve::error_object(serve::ApiError(400, "x", "p"));
}

void fuzz_serve(std::string_view body, uint8_t mode, bool chat) {
    const serve::ServedModel m = model_for(mode);
    try {
        const json j = serve::parse_body(std::string(body));
        const serve::GenerationRequest g = chat ? serve::parse_chat(j, m) : serve::parse_completion(j, m);
        check_request(g, m, chat);
    } catch (const serve::ApiError& e) {
        if (e.status != 400 && e.status != 404) bug("ApiError with status " + std::to_string(e.status));
        if (std::string(e.what()).empty()) bug("ApiError without a message");
        const json err = serve::error_object(e);
        (void)err.dump(-1, ' ', false, json::error_handler_t::replace);
    }
}

// The shared pieces of basalt batch's line parser: limits first, then parse, then field reads and error excerpts.
void fuzz_batch_line(std::string_view line) {
    if (!cli::check_json_limits(line).empty()) return;  // refused before parsing, as parse_job does
    json j;
    try {
        j = json::parse(line);
    } catch (const json::exception& e) {
        (void)cli::excerpt(e.what(), 200);
        return;
    }
    (void)cli::value_excerpt(j);
    if (!j.is_object()) return;
    for (const auto& [key, value] : j.items()) {
        (void)cli::excerpt(key);
        (void)cli::value_excerpt(value);
        std::vector<std::string> out;
        const std::string why = cli::read_string_or_list(value, key.c_str(), "a string or an array of strings", out);
        if (why.empty() && !(value.is_string() || value.is_array())) bug("read_string_or_list accepted a non-list");
        if (why.empty() && value.is_string() && (out.size() != 1 || out[0] != value.get<std::string>()))
            bug("read_string_or_list lost a string");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        switch (mode % 3) {
            case 0:
                fuzz_serve(rest, mode, false);
                break;
            case 1:
                fuzz_serve(rest, mode, true);
                break;
            default:
                fuzz_batch_line(rest);
                break;
        }
    } catch (const std::exception& e) {
        bug(std::string("unexpected exception: ") + e.what());
    }
    return 0;
}
