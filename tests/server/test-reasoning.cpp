// The reasoning splitter (tools/basalt/serve/reasoning.hpp): every way of cutting a reply into two chunks, and
// byte by byte, splits it as the whole reply does; each family's markers are recognised from its template.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "reasoning.hpp"

using namespace basalt::serve;

namespace {

struct Split {
    std::string reasoning, content;
    bool operator==(const Split& o) const { return reasoning == o.reasoning && content == o.content; }
};

Split split_chunks(const std::string& reply, bool starts_open, size_t cut, size_t step, ReasoningMarkers markers = {}) {
    ReasoningSplitter s(markers, starts_open);
    Split out;
    if (step != 0) {
        for (size_t i = 0; i < reply.size(); i += step) s.feed(reply.substr(i, step), out.reasoning, out.content);
    } else {
        s.feed(reply.substr(0, cut), out.reasoning, out.content);
        s.feed(reply.substr(cut), out.reasoning, out.content);
    }
    s.finish(out.reasoning, out.content);
    return out;
}

// The Jinja source of a template of the corpus (tests/chat-templates/templates).
std::string test_template_source(const std::string& name) {
    std::ifstream in(std::string(BASALT_CHAT_TEMPLATES_DIR) + "/templates/" + name, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST_CASE("reasoning: a reply splits the same however it is cut into chunks") {
    struct Case {
        std::string reply;
        bool starts_open;
        std::string reasoning, content;
    };
    const Case cases[] = {
        {"<think>\nstep one\n</think>\n\nThe answer.", false, "step one", "The answer."},
        {"  <think>a</think>b", false, "a", "b"},
        {"step one\n</think>\n\nThe answer.", true, "step one", "The answer."},
        {"no reasoning here", false, "", "no reasoning here"},
        {"\n\nleading space kept", false, "", "\n\nleading space kept"},
        {"answer <think>not reasoning</think>", false, "", "answer <think>not reasoning</think>"},
        {"<think>unclosed  \n", false, "unclosed", ""},
        {"<thin", false, "", "<thin"},
        {"a </thinking> b </think>c", true, "a </thinking> b", "c"},
        {"<think></think>", false, "", ""},
        {"x</think>   ", true, "x", ""},
    };
    for (const Case& c : cases) {
        INFO(c.reply);
        const Split want{c.reasoning, c.content};
        CHECK(split_chunks(c.reply, c.starts_open, c.reply.size(), 0) == want);
        CHECK(split_chunks(c.reply, c.starts_open, 0, 1) == want);
        for (size_t cut = 0; cut <= c.reply.size(); ++cut) {
            INFO(cut);
            CHECK(split_chunks(c.reply, c.starts_open, cut, 0) == want);
        }
    }
}

// gpt-oss's harmony format: the analysis channel is the reasoning, up to <|end|>; the next message's <|start|>assistant
// and the final channel's header are dropped, a commentary message (a tool call) stays content; a second analysis
// message is reasoning too; a reply straight to the final channel has no reasoning and loses the header. The markers
// come from the gpt-oss template of the corpus (tests/chat-templates/templates/openai-gpt-oss-120b.jinja, llama.cpp's
// models/templates).
TEST_CASE("reasoning: harmony's analysis channel is the reasoning, however the reply is cut") {
    const std::string source = test_template_source("openai-gpt-oss-120b.jinja");
    const ReasoningMarkers harmony = reasoning_markers_for(source);
    REQUIRE(std::string(harmony.open) == "<|channel|>analysis<|message|>");
    REQUIRE(std::string(harmony.close) == "<|end|>");
    struct Case {
        std::string reply, reasoning, content;
    };
    const Case cases[] = {
        {"<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|><|start|>assistant<|channel|>final<|message|>4",
         "User asks 2+2. Answer 4.", "4"},
        {"<|channel|>final<|message|>Just the answer.", "", "Just the answer."},
        {"<|channel|>analysis<|message|>still thinking", "still thinking", ""},
        {"plain text <|end|>", "", "plain text <|end|>"},
        {"<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|><|start|>"
         "assistant<|channel|>final<|message|>c",
         "a\nb", "c"},
        {"<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
         "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}",
         "Need the weather.",
         "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}"},
        {"<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.add<|channel|>commentary "
         "json<|message|>{}",
         "x", "to=functions.add<|channel|>commentary json<|message|>{}"},
    };
    for (const Case& c : cases) {
        INFO(c.reply);
        const Split want{c.reasoning, c.content};
        CHECK(split_chunks(c.reply, false, 0, 1, harmony) == want);
        for (size_t cut = 0; cut <= c.reply.size(); ++cut) {
            INFO(cut);
            CHECK(split_chunks(c.reply, false, cut, 0, harmony) == want);
        }
    }
    // The generation prompt ends with "<|start|>assistant": the reply opens its own channel.
    CHECK_FALSE(prompt_opens_reasoning("<|start|>user<|message|>hi<|end|><|start|>assistant", harmony));
}

TEST_CASE("reasoning: each family's markers come from its template; a generation prompt may open them") {
    CHECK(std::string(reasoning_markers_for("").open) == "<think>");
    CHECK(std::string(reasoning_markers_for("{{ '<think>' + r + '</think>' }}").close) == "</think>");
    CHECK(std::string(reasoning_markers_for("[THINK]{{ r }}[/THINK]").open) == "[THINK]");
    CHECK(std::string(reasoning_markers_for("<seed:think>{{ r }}</seed:think>").close) == "</seed:think>");
    CHECK(std::string(reasoning_markers_for("<|START_THINKING|>{{ r }}<|END_THINKING|>").open) == "<|START_THINKING|>");
    const ReasoningMarkers think;
    CHECK(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", think));
    CHECK_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", think));
    CHECK_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n", think));
}

// Gemma 4 thinks in "<|channel>thought\n ... <channel|>" (its template renders past reasoning so, and a thinking
// prompt ends the turn header without opening the channel: the model writes the opening itself).
TEST_CASE("reasoning: Gemma 4's thought channel is recognised from its template and split from the answer") {
    std::ifstream in(std::string(BASALT_CHAT_TEMPLATES_DIR) + "/templates/google-gemma-4-31B-it.jinja");
    REQUIRE(in.good());
    std::stringstream source;
    source << in.rdbuf();
    const ReasoningMarkers m = reasoning_markers_for(source.str());
    CHECK(std::string(m.open) == "<|channel>thought");
    CHECK(std::string(m.close) == "<channel|>");
    const std::string reply = "<|channel>thought\nIs 21 = 3 * 7? Yes.<channel|>No, 21 = 3 * 7.";
    for (size_t cut = 0; cut <= reply.size(); ++cut) {
        INFO(cut);
        ReasoningSplitter s(m, false);
        std::string reasoning, content;
        s.feed(reply.substr(0, cut), reasoning, content);
        s.feed(reply.substr(cut), reasoning, content);
        s.finish(reasoning, content);
        CHECK(reasoning == "Is 21 = 3 * 7? Yes.");
        CHECK(content == "No, 21 = 3 * 7.");
    }
}
