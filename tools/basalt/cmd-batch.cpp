// `basalt batch`: offline batch inference through the engine. One JSON request per line in, one JSON line per
// finished request out (stdout, in the order they finish), a summary on stderr. A malformed line is reported
// with its line number and does not stop the others.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "engine-setup.hpp"
#include "json-limits.hpp"
#include "moe-stats.hpp"
#include "request-spec.hpp"

namespace basalt::cli {
namespace {

using json = nlohmann::ordered_json;

// A prompt or source of more bytes than this per context token is refused before it is tokenized (as in serve).
constexpr size_t kPromptBytesPerToken = 64;

// Reads one line (without its '\n') into line, keeping at most `keep` bytes of it, and returns the line's whole
// length; false at the end of input. A line longer than `keep` is skipped, never held whole.
bool read_line(std::istream& in, std::string& line, size_t keep, size_t& length) {
    line.clear();
    length = 0;
    std::streambuf* sb = in.rdbuf();
    bool any = false;
    for (;;) {
        const int c = sb->sbumpc();
        if (c == std::char_traits<char>::eof()) {
            in.setstate(std::ios::eofbit);
            return any;
        }
        any = true;
        if (c == '\n') return true;
        if (length < keep) line.push_back(static_cast<char>(c));
        ++length;
    }
}

// One request line, parsed and checked.
struct Job {
    size_t line = 0;
    json id;
    RequestSpec spec;
    cpp::Request request;
};

// Reads v, an integer in [lo, hi], into out; returns false for another type or value (2^64-1 does not wrap).
bool integer_in(const json& v, int64_t lo, int64_t hi, int64_t& out) {
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
    out = v.get<int64_t>();
    return out >= lo && out <= hi;
}

// An embedding line: "input" (a string or token ids), "pooling", "normalize" (true/false), "dimensions"; no
// generation field. Returns "" or the reason it is malformed.
std::string parse_embed_fields(const json& j, Job& job) {
    for (const char* key : {"prompt", "tokens", "max_tokens", "samplers", "decoder", "stop", "seed", "cache_salt",
                            "steer", "source", "source_tokens", "logprobs"}) {
        if (j.contains(key)) return std::string("'") + key + "' does not go with 'input' (an embedding request)";
    }
    job.spec.flags |= BASALT_REQUEST_EMBED;
    const json& in = j["input"];
    if (in.is_string()) {
        job.spec.prompt = in.get<std::string>();
    } else if (in.is_array()) {
        for (const auto& t : in) {
            int64_t id = 0;
            if (!integer_in(t, 0, INT32_MAX, id))
                return "'input' must be a string or an array of token ids, not " + value_excerpt(in);
            job.spec.tokens.push_back(static_cast<int32_t>(id));
        }
        job.spec.has_tokens = true;
    } else {
        return "'input' must be a string or an array of token ids";
    }
    if (j.contains("pooling")) {
        static const std::pair<const char*, int32_t> kPoolings[] = {{"none", BASALT_POOLING_NONE},
                                                                    {"mean", BASALT_POOLING_MEAN},
                                                                    {"cls", BASALT_POOLING_CLS},
                                                                    {"last", BASALT_POOLING_LAST},
                                                                    {"rank", BASALT_POOLING_RANK}};
        const json& p = j["pooling"];
        bool known = false;
        for (const auto& [name, value] : kPoolings) {
            if (p.is_string() && p.get<std::string>() == name) {
                job.spec.pooling = value;
                known = true;
            }
        }
        if (!known) return "'pooling' must be one of \"none\", \"mean\", \"cls\", \"last\", \"rank\"";
    }
    if (j.contains("normalize")) {
        if (!j["normalize"].is_boolean()) return "'normalize' must be true (L2) or false";
        job.spec.normalize = j["normalize"].get<bool>() ? BASALT_NORMALIZE_L2 : BASALT_NORMALIZE_NONE;
    }
    if (j.contains("dimensions")) {
        int64_t d = 0;
        if (!integer_in(j["dimensions"], 1, INT32_MAX, d))
            return "'dimensions' must be a positive integer, not " + value_excerpt(j["dimensions"]);
        job.spec.dimensions = static_cast<uint32_t>(d);
    }
    return {};
}

// Reads the fields of a parsed line into job; returns "" or the reason it is malformed.
std::string parse_fields(const json& j, Job& job) {
    if (!j.is_object()) return "a request must be a JSON object";
    static const char* const kKeys[] = {"id",        "prompt",        "tokens",   "max_tokens",  "samplers",
                                        "decoder",   "stop",          "seed",     "cache_salt",  "steer",
                                        "source",    "source_tokens", "logprobs", "input",       "pooling",
                                        "normalize", "dimensions",    "grammar",  "json_schema", "regex"};
    for (const auto& [key, value] : j.items()) {
        if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
            return "unknown field '" + excerpt(key) +
                   "' (known: id, prompt, tokens, max_tokens, samplers, decoder, stop, seed, cache_salt, steer, "
                   "source, source_tokens, logprobs, input, pooling, normalize, dimensions, grammar, json_schema, "
                   "regex)";
        }
    }
    job.id = j.contains("id") ? j["id"] : json(job.line);
    // Embedding models (docs/embeddings.md): "input" (text or token ids) is embedded instead of continued.
    if (j.contains("input")) return parse_embed_fields(j, job);
    for (const char* key : {"pooling", "normalize", "dimensions"}) {
        if (j.contains(key)) return std::string("'") + key + "' belongs to an embedding request (one with 'input')";
    }
    // Encoder-decoder models: the source (then prompt/tokens, optional, are the decoder's prefix).
    if (j.contains("source_tokens")) {
        if (!j["source_tokens"].is_array()) return "'source_tokens' must be an array of token ids";
        for (const auto& t : j["source_tokens"]) {
            int64_t id = 0;
            if (!integer_in(t, 0, INT32_MAX, id))
                return "'source_tokens' must hold non-negative integer ids, not " + value_excerpt(t);
            job.spec.source_tokens.push_back(static_cast<int32_t>(id));
        }
        if (job.spec.source_tokens.empty())
            return "'source_tokens' is empty: an encoder-decoder request needs at least one source token";
        job.spec.has_source_tokens = true;
    } else if (j.contains("source")) {
        if (!j["source"].is_string()) return "'source' must be a string";
        job.spec.source = j["source"].get<std::string>();
        job.spec.has_source = true;
    }
    if (j.contains("tokens")) {
        if (!j["tokens"].is_array()) return "'tokens' must be an array of token ids";
        for (const auto& t : j["tokens"]) {
            int64_t id = 0;
            if (!integer_in(t, 0, INT32_MAX, id))
                return "'tokens' must hold non-negative integer ids, not " + value_excerpt(t);
            job.spec.tokens.push_back(static_cast<int32_t>(id));
        }
        job.spec.has_tokens = true;
    } else if (j.contains("prompt")) {
        if (!j["prompt"].is_string()) return "'prompt' must be a string";
        job.spec.prompt = j["prompt"].get<std::string>();
    } else if (!job.spec.has_source && !job.spec.has_source_tokens) {
        return "a request needs 'prompt' (text) or 'tokens' (ids) (encoder-decoder models: or 'source')";
    }
    if (j.contains("max_tokens")) {
        int64_t m = 0;
        if (!integer_in(j["max_tokens"], -1, INT32_MAX, m)) {
            return "'max_tokens' must be an integer from -1 (until the context is full) to 2^31-1, not " +
                   value_excerpt(j["max_tokens"]);
        }
        job.spec.max_tokens = static_cast<int32_t>(m);
    }
    if (j.contains("samplers")) {
        if (!j["samplers"].is_string()) return "'samplers' must be a chain string such as \"top_k:40;temp:0.7;dist\"";
        job.spec.samplers = j["samplers"].get<std::string>();
    }
    if (j.contains("decoder")) {
        if (!j["decoder"].is_string()) return "'decoder' must be a string such as \"sample\"";
        job.spec.decoder = j["decoder"].get<std::string>();
    }
    if (j.contains("stop")) {
        if (auto why = read_string_or_list(j["stop"], "stop", "a string or an array of strings", job.spec.stop);
            !why.empty())
            return why;
    }
    if (j.contains("cache_salt")) {
        if (!j["cache_salt"].is_string())
            return "'cache_salt' must be a string (requests share cached K/V only with the same salt)";
        job.spec.cache_salt = j["cache_salt"].get<std::string>();
    }
    if (j.contains("steer")) {
        if (auto why = read_string_or_list(j["steer"], "steer", "a string \"FILE[:SCALE[:A-B]]\" or an array of them",
                                           job.spec.steer);
            !why.empty())
            return why;
    }
    // Structured output (docs/structured-output.md): one of a GBNF text, a JSON Schema (an object) or a regex.
    if (j.contains("grammar") + j.contains("json_schema") + j.contains("regex") > 1)
        return "give one of 'grammar', 'json_schema' and 'regex'";
    if (j.contains("grammar")) {
        if (!j["grammar"].is_string()) return "'grammar' must be a GBNF text (a string)";
        job.spec.grammar_kind = BASALT_GRAMMAR_GBNF;
        job.spec.grammar = j["grammar"].get<std::string>();
    } else if (j.contains("json_schema")) {
        if (!j["json_schema"].is_object() && !j["json_schema"].is_boolean())
            return "'json_schema' must be a JSON Schema (an object)";
        job.spec.grammar_kind = BASALT_GRAMMAR_JSON_SCHEMA;
        job.spec.grammar = j["json_schema"].dump();
    } else if (j.contains("regex")) {
        if (!j["regex"].is_string()) return "'regex' must be a regular expression (a string)";
        job.spec.grammar_kind = BASALT_GRAMMAR_REGEX;
        job.spec.grammar = j["regex"].get<std::string>();
    }
    if (j.contains("logprobs")) {  // N: each token's log-probability and N alternatives (0..20)
        int64_t n = 0;
        if (!integer_in(j["logprobs"], 0, 20, n))
            return "'logprobs' must be an integer in 0..20 (alternatives per token), not " +
                   value_excerpt(j["logprobs"]);
        job.spec.flags |= BASALT_REQUEST_LOGPROBS;
        job.spec.n_top_logprobs = static_cast<int32_t>(n);
    }
    if (j.contains("seed")) {
        int64_t seed = 0;
        if (!integer_in(j["seed"], -1, INT64_MAX, seed))
            return "'seed' must be an integer from -1 to 2^63-1, not " + value_excerpt(j["seed"]);
        job.spec.seed = seed;
    }
    return {};
}

// Parses one line into job; returns "" or the reason it is malformed. Never throws: depth and key count are checked
// before parsing, numbers that overflow a double (1e400) are this line's error, messages quote short excerpts.
std::string parse_job(const std::string& text, Job& job) {
    if (auto why = check_json_limits(text); !why.empty()) return why;
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {  // parse errors, and numbers out of a double's range
        return "not valid JSON: " + excerpt(e.what(), 200);
    }
    try {
        return parse_fields(j, job);
    } catch (const json::exception& e) {
        return "bad request: " + excerpt(e.what(), 200);
    }
}

void print_line(const json& j) {
    std::cout << j.dump(-1, ' ', false, json::error_handler_t::replace) << '\n' << std::flush;
}

int run_batch(const po::variables_map& vm, const GlobalOptions& g) {
    cpp::EngineOptions options = engine_options(vm, g);
    const std::string moe_router = options.params.compute.moe_router;
    const bool moe_stats = (options.params.flags & BASALT_ENGINE_MOE_STATS) != 0;
    const std::string path = vm["requests"].as<std::string>();
    const std::string adaptive = draft_adaptive(vm);
    std::ifstream file;
    std::istream* in = &std::cin;
    if (path != "-") {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) {
            print_error("'" + path + "' is a directory; --requests takes a file of JSON lines (or - for stdin)");
            return kExitError;
        }
        file.open(path);
        if (!file) {
            print_error("cannot open '" + path + "'");
            return kExitError;
        }
        in = &file;
    }

    // Every line first: the engine's cache sequences are sized for the widest decoder asked for (beams).
    std::vector<std::unique_ptr<Job>> parsed;
    std::vector<std::string> why_not;
    options.prepare = [&](const cpp::Runtime& rt, const cpp::Model& m, cpp::EngineParams& p) {
        std::map<std::string, uint32_t> needs;  // cache sequences per decoder spec
        // A text of more bytes than kPromptBytesPerToken per context token is refused before it is tokenized.
        const uint32_t train = m.info().n_ctx_train;
        const size_t n_ctx = p.n_ctx != 0 ? p.n_ctx : std::min<uint32_t>(train == 0 ? 4096 : train, 4096);
        const size_t prompt_bytes = kPromptBytesPerToken * n_ctx;
        // A line is read up to the longest a valid one can be: a prompt and a source at the bound, each byte
        // written as a 6-byte \uXXXX escape, and 64 KiB for the other fields. A longer line is refused by its
        // length, before it is parsed or tokenized, and never held whole.
        // At least 4 MiB, the default --max-body of serve.
        const size_t line_bytes = std::max<size_t>(2 * 6 * prompt_bytes + 65536, size_t{4} << 20);
        uint32_t widest = 1;
        size_t line_no = 0, length = 0;
        std::string line;
        while (read_line(*in, line, line_bytes + 1, length)) {
            ++line_no;
            if (length > line_bytes) {
                auto job = std::make_unique<Job>();
                job->line = line_no;
                parsed.push_back(std::move(job));
                why_not.push_back("a line of " + std::to_string(length) + " bytes; lines over " +
                                  std::to_string(line_bytes) + " bytes (texts over " +
                                  std::to_string(kPromptBytesPerToken) +
                                  " bytes per context token, escaped) are refused before parsing");
                continue;
            }
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines are skipped
            auto job = std::make_unique<Job>();
            job->line = line_no;
            std::string why = parse_job(line, *job);
            if (why.empty()) job->spec.decoder = with_draft_adaptive(job->spec.decoder, adaptive);
            for (const std::string* text : {&job->spec.prompt, &job->spec.source}) {
                if (why.empty() && text->size() > prompt_bytes)
                    why = "a text of " + std::to_string(text->size()) + " bytes; texts over " +
                          std::to_string(kPromptBytesPerToken) + " bytes per context token (" +
                          std::to_string(prompt_bytes) + " bytes) are refused before tokenizing";
            }
            const std::string spec = job->spec.decoder.empty() ? "sample" : job->spec.decoder;
            if (why.empty() && needs.count(spec) == 0) {
                try {
                    needs[spec] = decoder_sequences(rt, m, spec);
                } catch (const cpp::Error& e) {
                    why = e.what();
                }
            }
            if (why.empty()) widest = std::max(widest, needs[spec]);
            parsed.push_back(std::move(job));
            why_not.push_back(why);
        }
        p.n_seq_max = p.n_parallel * widest;
    };
    cpp::OpenEngine e = cpp::open_engine(std::move(options));
    const cpp::Model& model = e.model;

    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::unique_ptr<Job>> jobs;
    size_t failed = 0, rejected = 0;
    for (size_t k = 0; k < parsed.size(); ++k) {
        auto& job = parsed[k];
        std::string why = why_not[k];
        if (why.empty()) {
            try {
                job->request = e.engine.submit(job->spec);
            } catch (const cpp::Error& err) {
                why = err.what();
            }
        }
        if (!why.empty()) {
            std::cerr << "basalt batch: line " << job->line << ": " << why << '\n';
            print_line(
                json{{"id", job->id.is_null() ? json(job->line) : job->id}, {"line", job->line}, {"error", why}});
            ++failed;
            ++rejected;
            continue;
        }
        jobs.push_back(std::move(job));
    }

    // Step until every request has finished, printing each as it does.
    std::vector<bool> printed(jobs.size(), false);
    size_t done = 0, generated = 0, prompt_tokens = 0;
    bool step_failed = false;
    for (;;) {
        size_t active = 0;
        try {
            active = e.engine.step();
        } catch (const cpp::Error& err) {
            step_failed = true;
            std::cerr << "basalt batch: " << err.what() << '\n';
        }
        for (size_t i = 0; i < jobs.size(); ++i) {
            if (printed[i]) continue;
            cpp::Request& r = jobs[i]->request;
            const int32_t reason = r.finish_reason();
            if (reason == BASALT_FINISH_NONE) continue;
            printed[i] = true;
            ++done;
            std::vector<int32_t> toks;
            std::string text;
            r.read(toks, text);
            const basalt_request_stats st = r.stats();
            generated += st.generated_tokens;
            prompt_tokens += st.prompt_tokens;
            if ((jobs[i]->spec.flags & BASALT_REQUEST_EMBED) != 0) {  // an embedding: its vector, or why not
                json out = {{"id", jobs[i]->id}, {"finish_reason", basalt_finish_reason_name(reason)}};
                if (reason == BASALT_FINISH_STOP) {
                    out["embedding"] = r.embedding();
                } else {
                    out["error"] = r.error();
                    ++failed;
                }
                out["prompt_tokens"] = st.prompt_tokens;
                out["encode_ms"] = st.encode_ms;
                print_line(out);
                continue;
            }
            json out = {{"id", jobs[i]->id},
                        {"text", text},
                        {"tokens", toks},
                        {"finish_reason", basalt_finish_reason_name(reason)},
                        {"prompt_tokens", st.prompt_tokens},
                        {"cached_tokens", st.cached_tokens},
                        {"ttft_ms", st.ttft_ms},
                        {"tokens_per_s", st.tokens_per_s}};
            if (st.source_tokens > 0) {  // encoder-decoder: the source and its share of the encoder pass
                out["source_tokens"] = st.source_tokens;
                out["encode_ms"] = st.encode_ms;
            }
            if (r.n_logprobs() > 0) {  // logprobs: {token, logprob, top: [[id, logprob], ...]}
                json lps = json::array();
                for (size_t k = 0; k < r.n_logprobs(); ++k) {
                    const cpp::Logprob lp = r.logprob(k, 20);
                    json top = json::array();
                    for (const auto& [id, top_lp] : lp.top) top.push_back({id, top_lp});
                    lps.push_back({{"token", lp.token}, {"logprob", lp.logprob}, {"top", std::move(top)}});
                }
                out["logprobs"] = std::move(lps);
            }
            if (r.n_hypotheses() > 1) {  // n-best (beam search): every hypothesis with its score
                json hyps = json::array();
                for (size_t h = 0; h < r.n_hypotheses(); ++h) {
                    float score = 0.f;
                    const std::vector<int32_t> ht = r.hypothesis(h, &score);
                    std::string htext;
                    for (int32_t t : ht) htext += model.piece(t, false);
                    hyps.push_back({{"tokens", ht}, {"text", h == 0 ? text : htext}, {"score", score}});
                }
                out["hypotheses"] = hyps;
            }
            {
                json figures = json::object();
                for (const auto& [name, value] : r.decoder_stats()) figures[name] = value;
                if (!figures.empty()) out["decoder_stats"] = figures;
            }
            if (reason == BASALT_FINISH_ERROR) {
                out["error"] = r.error();
                std::cerr << "basalt batch: line " << jobs[i]->line << ": " << r.error() << '\n';
                ++failed;
            }
            print_line(out);
        }
        if (active == 0) break;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const basalt_engine_stats es = e.engine.stats();
    std::cerr << "batch: " << jobs.size() + rejected << " requests (" << failed << " failed), prompt " << prompt_tokens
              << " tokens, generated " << generated << " tokens in " << wall << " s ("
              << (wall > 0 ? static_cast<double>(generated) / wall : 0.0) << " t/s), " << es.steps
              << " steps, largest step " << es.batch_tokens_max << " tokens, prefix cache " << es.cached_tokens
              << " prompt tokens reused ("
              << (es.cached_tokens + es.prompt_tokens > 0 ? 100.0 * static_cast<double>(es.cached_tokens) /
                                                                static_cast<double>(es.cached_tokens + es.prompt_tokens)
                                                          : 0.0)
              << " % hit rate), " << es.preemptions << " preemptions\n";
    if (moe_stats) {
        const nlohmann::json moe =
            moe_stats_json([&e](uint32_t il, basalt_moe_stats* st, uint64_t* per,
                                size_t n) { return basalt_engine_moe_stats(e.engine.get(), il, st, per, n); },
                           model, moe_router);
        print_moe_stats(moe, std::cerr);
    }
    return failed > 0 || step_failed ? kExitError : kExitOk;
}

const Registrar kBatch{Command{
    "batch", "offline batch inference: JSON requests in, JSON results out",
    "basalt batch -m MODEL --requests FILE.jsonl [--max-batch-tokens N] [--chunk N] [--parallel N] [--draft|--amateur "
    "MODEL]",
    [](po::options_description& d, po::positional_options_description&) {
        d.add_options()("model,m", po::value<std::string>()->default_value("target"),
                        "GGUF model file, or a shipped model's name (target, draft)")(
            "requests,r", po::value<std::string>()->required(),
            "JSON lines: {\"id\", \"prompt\" | \"tokens\", \"max_tokens\" (64), \"samplers\", \"decoder\", \"stop\", "
            "\"seed\", \"cache_salt\", \"steer\", \"source\" | \"source_tokens\" (encoder-decoder models: the "
            "encoder's input; prompt/tokens are then the decoder's prefix), \"logprobs\" (N: per-token "
            "log-probabilities and N alternatives)}; embedding models: {\"id\", \"input\" (text or ids), "
            "\"pooling\", \"normalize\", \"dimensions\"} lines answer {\"id\", \"embedding\"}; - reads stdin")(
            "max-batch-tokens", int_option("max-batch-tokens", 1, 1 << 20),
            "token budget of one step (default: --batch, 512)")(
            "chunk", int_option("chunk", 0, 1 << 20)->default_value(256),
            "longest prefill piece per request and step (0: whole prompts)")(
            "parallel", int_option("parallel", 1, 4096)->default_value(8), "requests running at once")(
            "draft", po::value<std::string>(),
            "draft model for speculative requests (a file or a shipped name: draft)")(
            "amateur", po::value<std::string>(), "amateur model for contrastive requests (a file or a shipped name)")(
            "no-prefix-cache", po::bool_switch(),
            "compute every prompt in full (no reuse of cached K/V across requests)")(
            "prefix-state-mib", int_option("prefix-state-mib", 1, 1 << 20),
            "hybrid models: MiB of host memory for the prefix cache's recurrent-state checkpoints (default: 16 "
            "states, or 2 per running request)")(
            "moe-stats", po::bool_switch(),
            "the engine's MoE routing statistics per layer in the summary (docs/moe.md)");
        add_draft_adaptive_option(d);
        add_admission_options(d);
        // Offline: results are written when a request ends, so nothing gains from bounding a step's time, and the
        // budget's shorter prompt pieces cost throughput (docs/performance.md, "Step-time budget").
        add_max_step_option(d, "off");
        add_session_options(d);
    },
    run_batch}};

}  // namespace
}  // namespace basalt::cli
