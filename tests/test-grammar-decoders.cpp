// Structured output through the engine's C API on the shipped models: a request's grammar (basalt_request_params.
// grammar) constrains every decoder — sample (greedy and seeded sampling), speculative (greedy: equal to plain
// constrained greedy token for token; stochastic: every output matches, and the draws follow the constrained
// distribution, a chi-square test), beam (every hypothesis matches), contrastive — and requests with different
// grammars share one engine's batches. The output text is the token pieces the grammar saw.
#include <basalt/basalt.h>

#include <cmath>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;

namespace {

using test::shipped;

basalt_engine_params engine_params(const basalt_model* second, uint32_t parallel = 1, uint32_t ctx = 256) {
    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.n_parallel = parallel;
    p.n_ctx = ctx;
    p.n_threads = 2;
    p.second_model = second;
    p.n_seq_max = 4;
    return p;
}

basalt_request_params request(const char* prompt, int32_t max_tokens, const char* samplers, const char* decoder,
                              int32_t kind, const char* grammar, int64_t seed = -1) {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.prompt = prompt;
    p.prompt_len = SIZE_MAX;
    p.samplers = samplers;
    p.decoder = decoder;
    p.max_tokens = max_tokens;
    p.seed = seed;
    p.grammar_kind = kind;
    p.grammar = grammar;
    return p;
}

// The output as the grammar saw it: each token's piece, end-of-generation tokens left out.
std::string text_of(const basalt_model* m, const std::vector<int32_t>& tokens) {
    basalt_special_tokens sp{};
    sp.struct_size = sizeof(sp);
    REQUIRE(basalt_model_special_tokens(m, &sp) == BASALT_OK);
    std::string out;
    for (const int32_t t : tokens) {
        if (t == sp.eos) continue;
        char buf[256];
        size_t n = 0;
        REQUIRE(basalt_token_to_piece(m, t, 0, buf, sizeof(buf), &n) == BASALT_OK);
        out.append(buf, n);
    }
    return out;
}

struct Run {
    std::vector<std::vector<int32_t>> hyps;
    int32_t finish = 0;
};

Run solo(basalt_runtime* rt, const basalt_model* m, const basalt_model* second, const basalt_request_params& p) {
    test::Engine e(rt, m, engine_params(second));
    test::Request r;
    const basalt_status st = basalt_engine_submit(e.e, &p, &r.r);
    INFO(basalt_last_error());
    REQUIRE(st == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    INFO(basalt_request_error(r.r));
    REQUIRE(basalt_request_finish_reason(r.r) != BASALT_FINISH_ERROR);
    Run out;
    out.finish = basalt_request_finish_reason(r.r);
    for (size_t i = 0; i < basalt_request_n_hypotheses(r.r); ++i) out.hyps.push_back(test::hypothesis_tokens(r.r, i));
    return out;
}

const char* const kRegex = "(yes|no|maybe), [a-z]{2,6}( [a-z]{2,6}){0,2}\\.";
const char* const kGbnf = "root ::= \"answer: \" item (\", \" item){0,2} \".\"\nitem ::= [0-9]{1,3} | \"none\"\n";

// Matches a complete output, or (cut by max_tokens) a prefix of one.
void check_regex_output(const std::string& text, int32_t finish) {
    INFO(text);
    if (finish == BASALT_FINISH_STOP) {
        CHECK(std::regex_match(text, std::regex(kRegex)));
    } else {
        CHECK(std::regex_match(text, std::regex("(yes|no|maybe)?(, [a-z ]*)?|y|ye|n|m|ma|may|mayb")));
    }
}

}  // namespace

TEST_CASE("a grammar constrains greedy and sampled decoding", "[grammar][decoder]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target"));
    for (const char* chain : {"greedy", "top_k:40;temp:1.2;dist"}) {
        for (int64_t seed = 1; seed <= 4; ++seed) {
            const Run r = solo(rt.rt, target.m, nullptr,
                               request("Once upon a time", 60, chain, "sample", BASALT_GRAMMAR_REGEX, kRegex, seed));
            check_regex_output(text_of(target.m, r.hyps[0]), r.finish);
        }
    }
    const Run g = solo(rt.rt, target.m, nullptr,
                       request("The cat", 60, "top_k:40;temp:1.5;dist", "sample", BASALT_GRAMMAR_GBNF, kGbnf, 9));
    const std::string t = text_of(target.m, g.hyps[0]);
    INFO(t);
    CHECK(g.finish == BASALT_FINISH_STOP);
    CHECK(std::regex_match(t, std::regex("answer: ([0-9]{1,3}|none)(, ([0-9]{1,3}|none)){0,2}\\.")));
}

TEST_CASE("speculative decoding with a grammar: greedy equals constrained greedy, sampling stays inside",
          "[grammar][decoder][speculative]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target")), draft(shipped("draft"));
    for (const char* prompt : {"Once upon a time", "The cat", "You will be"}) {
        const Run want =
            solo(rt.rt, target.m, nullptr, request(prompt, 50, "greedy", "sample", BASALT_GRAMMAR_REGEX, kRegex));
        for (const char* dec : {"speculative:k=4", "speculative:source=ngram,k=3"}) {
            const Run got =
                solo(rt.rt, target.m, draft.m, request(prompt, 50, "greedy", dec, BASALT_GRAMMAR_REGEX, kRegex));
            INFO(prompt << " " << dec);
            CHECK(got.hyps[0] == want.hyps[0]);
        }
        for (int64_t seed = 1; seed <= 3; ++seed) {
            const Run s =
                solo(rt.rt, target.m, draft.m,
                     request(prompt, 50, "temp:1.3;dist", "speculative:k=3", BASALT_GRAMMAR_REGEX, kRegex, seed));
            check_regex_output(text_of(target.m, s.hyps[0]), s.finish);
        }
    }
}

TEST_CASE("speculative + grammar samples the constrained distribution (chi-square against sample + grammar)",
          "[grammar][decoder][speculative]") {
    // A grammar with few outputs: the frequencies of whole outputs under both decoders are compared.
    const char* g = "root ::= (\"yes\" | \"no\" | \"maybe\" | \"never\") \".\"\n";
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target")), draft(shipped("draft"));
    const int n = 150;
    std::map<std::string, int> a, b;
    test::Engine e(rt.rt, target.m, engine_params(draft.m, 16));
    std::vector<test::Request> rs(2 * n);
    for (int i = 0; i < 2 * n; ++i) {
        const bool spec = i >= n;
        const basalt_request_params p = request("Q: Will it rain?\nA:", 24, "temp:2;dist",
                                                spec ? "speculative:k=3" : "sample", BASALT_GRAMMAR_GBNF, g, 1000 + i);
        INFO(basalt_last_error());
        REQUIRE(basalt_engine_submit(e.e, &p, &rs[static_cast<size_t>(i)].r) == BASALT_OK);
    }
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    for (int i = 0; i < 2 * n; ++i) {
        basalt_request* r = rs[static_cast<size_t>(i)].r;
        INFO(basalt_request_error(r));
        REQUIRE(basalt_request_finish_reason(r) == BASALT_FINISH_STOP);
        const std::string t = text_of(target.m, test::hypothesis_tokens(r));
        INFO("text [" << t << "]");
        REQUIRE(std::regex_match(t, std::regex("(yes|no|maybe|never)\\.")));
        (i < n ? a : b)[t]++;
    }
    // Two-sample chi-square over the outputs seen; df = categories - 1, 99.9% critical values.
    double chi = 0;
    std::map<std::string, int> all = a;
    for (const auto& [k, v] : b) all[k] += 0 * v;
    for (const auto& [k, v] : all) {
        const double x = a[k], y = b[k];
        if (x + y > 0) chi += (x - y) * (x - y) / (x + y);
    }
    const double crit[] = {0, 10.83, 13.82, 16.27, 18.47};
    const size_t df = all.size() - 1;
    INFO("chi2 " << chi << " df " << df);
    CHECK(chi < crit[std::min<size_t>(df, 4)]);
}

TEST_CASE("beam search with a grammar: every hypothesis matches (each beam its own grammar state)",
          "[grammar][decoder][beam]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target"));
    for (const char* prompt : {"Once upon a time", "The cat"}) {
        const Run r = solo(rt.rt, target.m, nullptr,
                           request(prompt, 40, "greedy", "beam:width=4,n_best=3", BASALT_GRAMMAR_GBNF, kGbnf));
        REQUIRE(r.hyps.size() == 3);
        for (const auto& h : r.hyps) {
            const std::string t = text_of(target.m, h);
            INFO(prompt << ": " << t);
            CHECK(std::regex_match(t, std::regex("answer: ([0-9]{1,3}|none)(, ([0-9]{1,3}|none)){0,2}\\.")));
        }
    }
}

TEST_CASE("contrastive decoding with a grammar stays inside it", "[grammar][decoder][contrastive]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target")), draft(shipped("draft"));
    for (const char* prompt : {"Once upon a time", "You will be"}) {
        const Run r = solo(rt.rt, target.m, draft.m,
                           request(prompt, 50, "greedy", "contrastive:alpha=0.1", BASALT_GRAMMAR_REGEX, kRegex));
        check_regex_output(text_of(target.m, r.hyps[0]), r.finish);
    }
}

TEST_CASE("requests with different grammars (and none) share one engine's batches", "[grammar][engine]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target"));
    test::Engine e(rt.rt, target.m, engine_params(nullptr, 8));
    const char* schema =
        R"({"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":3}},"required":["n"],)"
        R"("additionalProperties":false})";
    struct Job {
        int32_t kind;
        const char* grammar;
    };
    const Job jobs[] = {{BASALT_GRAMMAR_REGEX, kRegex},
                        {BASALT_GRAMMAR_GBNF, kGbnf},
                        {BASALT_GRAMMAR_NONE, nullptr},
                        {BASALT_GRAMMAR_JSON_SCHEMA, schema},
                        {BASALT_GRAMMAR_REGEX, "[0-9]{4}-[0-9]{2}"},
                        {BASALT_GRAMMAR_GBNF, kGbnf}};
    std::vector<test::Request> rs(std::size(jobs));
    for (size_t i = 0; i < std::size(jobs); ++i) {
        const basalt_request_params p = request("Once upon a time", 300, "top_k:20;temp:1.1;dist", "sample",
                                                jobs[i].kind, jobs[i].grammar, static_cast<int64_t>(i + 1));
        INFO(basalt_last_error());
        REQUIRE(basalt_engine_submit(e.e, &p, &rs[i].r) == BASALT_OK);
    }
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    for (size_t i = 0; i < std::size(jobs); ++i) {
        basalt_request* r = rs[i].r;
        INFO(i << ": " << basalt_request_error(r));
        REQUIRE(basalt_request_finish_reason(r) != BASALT_FINISH_ERROR);
        const std::string t = text_of(target.m, test::hypothesis_tokens(r));
        const bool done = basalt_request_finish_reason(r) == BASALT_FINISH_STOP;
        INFO(t);
        if (i == 0) check_regex_output(t, basalt_request_finish_reason(r));
        if ((i == 1 || i == 5) && done)
            CHECK(std::regex_match(t, std::regex("answer: ([0-9]{1,3}|none)(, ([0-9]{1,3}|none)){0,2}\\.")));
        if (i == 3 && done) CHECK(std::regex_match(t, std::regex(R"(\{\s*"n"\s*:\s*[123]\s*\}\s*)")));
        if (i == 4 && done) CHECK(std::regex_match(t, std::regex("[0-9]{4}-[0-9]{2}")));
    }
}

TEST_CASE("a grammar that does not compile fails the submit, naming what is wrong", "[grammar][engine]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target"));
    test::Engine e(rt.rt, target.m, engine_params(nullptr));
    struct Bad {
        int32_t kind;
        const char* text;
        const char* says;
    };
    const Bad bad[] = {{BASALT_GRAMMAR_GBNF, "root ::= x\n", "undefined rule 'x'"},
                       {BASALT_GRAMMAR_GBNF, "root ::= root \"a\" | \"b\"\n", "left-recursive"},
                       {BASALT_GRAMMAR_GBNF, "root ::= [a\n", "unterminated character class at 2:1"},
                       {BASALT_GRAMMAR_JSON_SCHEMA, R"({"type":"object","not":{}})", "'not'"},
                       {BASALT_GRAMMAR_JSON_SCHEMA, "{", "not valid JSON"},
                       {BASALT_GRAMMAR_REGEX, "a(?=b)", "look-around"},
                       {99, "x", "grammar_kind 99"}};
    for (const Bad& b : bad) {
        const basalt_request_params p = request("x", 4, "greedy", "sample", b.kind, b.text);
        basalt_request* r = nullptr;
        CHECK(basalt_engine_submit(e.e, &p, &r) != BASALT_OK);
        CHECK_THAT(std::string(basalt_last_error()), Contains(b.says));
        basalt_request_free(r);
    }
    // the chain API has no model: a grammar sampler there is refused, naming why
    basalt_sampler_chain* chain = nullptr;
    CHECK(basalt_sampler_chain_create(rt.rt, "grammar:kind=regex,text=a;greedy", &chain) ==
          BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(basalt_last_error()), Contains("needs the model's vocabulary"));
}

TEST_CASE("a lazy grammar (gbnf_schemas with a trigger) is free until the trigger, constrained from it on",
          "[grammar][engine]") {
    // Tool calling's tool_choice auto: free text, and from the call marker on a call. Here the marker is " the":
    // once the output spells it (and the bytes from it on can continue the grammar), the rest is " the end.".
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target"));
    const char* const lazy = R"({"gbnf": "root ::= \" the\" \" end\" \".\"\n", "trigger": " the"})";
    const std::string grammar_end = " the end.";
    int armed = 0;
    for (int64_t seed = 1; seed <= 8; ++seed) {
        const Run r = solo(rt.rt, target.m, nullptr,
                           request("Once upon a time", 40, "top_k:40;temp:1.0;dist", "sample",
                                   BASALT_GRAMMAR_GBNF_SCHEMAS, lazy, seed));
        const std::string t = text_of(target.m, r.hyps[0]);
        INFO(t);
        // Each " the" either armed the grammar (the rest is a prefix of " the end.") or was refused by it (" there").
        bool was_armed = false;
        for (size_t k = t.find(" the"); k != std::string::npos; k = t.find(" the", k + 1)) {
            const std::string rest = t.substr(k);
            if (grammar_end.compare(0, rest.size(), rest) == 0 && rest.size() <= grammar_end.size()) {
                was_armed = true;
                if (rest == grammar_end) CHECK(r.finish == BASALT_FINISH_STOP);
                break;
            }
            CHECK(rest.size() > 4);
            CHECK(rest[4] != ' ');
        }
        armed += was_armed ? 1 : 0;
    }
    CHECK(armed >= 1);
    test::Engine e(rt.rt, target.m, engine_params(nullptr));
    test::Request r;
    const basalt_request_params bad = request("x", 4, "greedy", "sample", BASALT_GRAMMAR_GBNF_SCHEMAS,
                                              R"({"gbnf": "root ::= \"a\"", "trigger": ""})");
    CHECK(basalt_engine_submit(e.e, &bad, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(basalt_last_error()), Contains("'trigger' must be a non-empty string"));
}

TEST_CASE("a gbnf_schemas grammar's control tokens stand for their text, and fire its lazy trigger by id",
          "[grammar][engine]") {
    // Tool calling where a call marker is one control token (no output text of its own): "tokens" maps the marker's
    // text to the token, which the grammar then allows where that text comes and reads as it. tiny-gpt-oss's
    // <|startoftext|> is such a token (a control token that does not end generation) and stands in for a marker
    // here. A logit bias makes greedy decoding pick the token wherever it is allowed.
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model m(test::golden_model("tiny-gpt-oss-f32.gguf"));
    int32_t ch = -1;
    size_t n = 0;
    REQUIRE(basalt_tokenize(m.m, "<|startoftext|>", 15, BASALT_TOKENIZE_PARSE_SPECIAL, &ch, 1, &n) == BASALT_OK);
    REQUIRE(n == 1);
    char piece[8];
    size_t len = 1;
    REQUIRE(basalt_token_to_piece(m.m, ch, 0, piece, sizeof(piece), &len) == BASALT_OK);
    REQUIRE(len == 0);  // no text of its own
    const std::string bias = "logit_bias:" + std::to_string(ch) + ":30;greedy";
    const std::string gbnf = R"("gbnf": "root ::= \"<|startoftext|>\" \"ab\"\n")";
    const std::string tokens = R"("tokens": {"<|startoftext|>": )" + std::to_string(ch) + "}";
    struct Case {
        std::string grammar;
        bool token_first;  // the output opens with the control token
        std::string text;  // the output's text (the control token has none)
    };
    const Case cases[] = {
        {"{" + gbnf + ", " + tokens + "}", true, "ab"},                                   // constrained from the start
        {"{" + gbnf + "}", false, "<|startoftext|>ab"},                                   // no map: the text
        {"{" + gbnf + R"(, "trigger": "<|startoftext|>", )" + tokens + "}", true, "ab"},  // free, armed by the id
    };
    for (const Case& c : cases) {
        INFO(c.grammar);
        const Run r =
            solo(rt.rt, m.m, nullptr,
                 request("hello", 40, bias.c_str(), "sample", BASALT_GRAMMAR_GBNF_SCHEMAS, c.grammar.c_str()));
        REQUIRE(!r.hyps[0].empty());
        CHECK((r.hyps[0][0] == ch) == c.token_first);
        CHECK(text_of(m.m, r.hyps[0]) == c.text);
        CHECK(r.finish == BASALT_FINISH_STOP);
    }
    // A map that is not texts to token ids is refused at submit.
    test::Engine e(rt.rt, m.m, engine_params(nullptr));
    test::Request r;
    const basalt_request_params bad = request("x", 4, "greedy", "sample", BASALT_GRAMMAR_GBNF_SCHEMAS,
                                              R"({"gbnf": "root ::= \"a\"", "tokens": {"<x>": "7"}})");
    CHECK(basalt_engine_submit(e.e, &bad, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(basalt_last_error()), Contains("'tokens' maps a non-empty text to a token id"));
}
