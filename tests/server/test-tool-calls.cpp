// Tool calling in basalt serve: the convention table against the template corpus, each convention's reply parser
// (whole, streamed in chunks of every size, several calls, cut short, malformed text that stays content), and the
// tool_choice grammar of each convention compiled by the grammar engine and matching the reply the parser reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "grammar-source.hpp"
#include "matcher.hpp"
#include "token-trie.hpp"
#include "tool-call-parser.hpp"
#include "tool-conventions.hpp"

using namespace basalt::serve;
using json = nlohmann::ordered_json;

namespace {

const ToolConvention& convention(const std::string& name) {
    for (const ToolConvention& c : tool_conventions())
        if (name == c.name) return c;
    FAIL("no convention " << name);
    return tool_conventions().front();
}

std::string read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct Reply {
    std::string content;
    std::vector<ToolCall> calls;
};

// Feeds text in chunks of `chunk` bytes (0: whole); checks the streamed deltas rebuild the parser's calls.
Reply parse(const ToolConvention& c, const std::string& text, size_t chunk = 0, bool opened = false) {
    // get_weather's city is a string parameter (XML conventions take its value raw), add's a and b are not.
    ToolCallParser p(c, {"get_weather", "add"}, "call_", opened, {{"get_weather", {"city"}}, {"add", {}}});
    Reply r;
    std::vector<ToolCallDelta> deltas;
    if (chunk == 0) chunk = text.size() + 1;
    for (size_t i = 0; i < text.size(); i += chunk) p.feed(text.substr(i, chunk), r.content, deltas);
    p.finish(r.content, deltas);
    std::map<size_t, ToolCall> rebuilt;
    for (const ToolCallDelta& d : deltas) {
        ToolCall& call = rebuilt[d.index];
        if (!d.id.empty()) {
            CHECK(call.name.empty());  // id and name come once, on the call's first delta
            call.id = d.id;
            call.name = d.name;
        }
        call.arguments += d.arguments;
    }
    r.calls = p.calls();
    REQUIRE(rebuilt.size() == r.calls.size());
    for (size_t i = 0; i < r.calls.size(); ++i) {
        CHECK(rebuilt[i].id == r.calls[i].id);
        CHECK(rebuilt[i].name == r.calls[i].name);
        CHECK(rebuilt[i].arguments == r.calls[i].arguments);
    }
    return r;
}

// The same reply whole and in chunks of 1, 2, 3, 5 and 8 bytes.
Reply parse_all_ways(const ToolConvention& c, const std::string& text, bool opened = false) {
    const Reply whole = parse(c, text, 0, opened);
    for (size_t chunk : {1, 2, 3, 5, 8}) {
        const Reply r = parse(c, text, chunk, opened);
        INFO("chunk " << chunk);
        CHECK(r.content == whole.content);
        REQUIRE(r.calls.size() == whole.calls.size());
        for (size_t i = 0; i < r.calls.size(); ++i) {
            CHECK(r.calls[i].name == whole.calls[i].name);
            CHECK(r.calls[i].arguments == whole.calls[i].arguments);
        }
    }
    return whole;
}

void check_call(const ToolCall& call, const std::string& name, const json& args) {
    CHECK(call.name == name);
    const json parsed = json::parse(call.arguments, nullptr, false);
    CHECK(parsed == args);
}

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "weather of a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                  "additionalProperties": false}}},
  {"type": "function", "function": {"name": "add",
   "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                  "required": ["a"], "additionalProperties": false}}}])");

// Whether the grammar (BASALT_GRAMMAR_GBNF_SCHEMAS text) matches text whole.
bool grammar_matches(const std::string& grammar, const std::string& text) {
    const char* texts[] = {"a"};
    const size_t lens[] = {1};
    const uint32_t flags[] = {0};
    basalt_vocab_view v{};
    v.struct_size = sizeof(v);
    v.n_tokens = 1;
    v.texts = texts;
    v.text_lens = lens;
    v.token_flags = flags;
    auto g = std::make_shared<const basalt::grammar::Grammar>(basalt::grammar::compile_source("gbnf_schemas", grammar));
    basalt::grammar::Matcher m(g, basalt::grammar::TokenTrie::build(v));
    basalt::grammar::State s;
    if (!m.accept_bytes(m.initial(), reinterpret_cast<const uint8_t*>(text.data()), text.size(), s)) return false;
    return m.can_end(s);
}

}  // namespace

TEST_CASE("tools: each template of the corpus gets its convention from the table", "[tools]") {
    const std::map<std::string, const char*> expected = {
        {"Qwen-Qwen2.5-7B-Instruct", "hermes"},
        {"Qwen-Qwen3-0.6B", "hermes"},
        {"Qwen-QwQ-32B", "hermes"},
        {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "hermes"},
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "hermes"},
        {"ibm-granite-granite-4.0", "hermes"},
        {"meta-llama-Llama-3.1-8B-Instruct", "llama3-json"},
        {"meta-llama-Llama-3.2-3B-Instruct", "llama3-json"},
        {"meta-llama-Llama-3.3-70B-Instruct", "llama3-json"},
        {"mistralai-Mistral-Nemo-Instruct-2407", "mistral"},
        {"unsloth-mistral-Devstral-Small-2507", "mistral-args"},
        {"Mistral-Small-3.2-24B-Instruct-2506", "mistral-args"},
        {"mistralai-Ministral-3-14B-Reasoning-2512", "mistral-args"},
        {"ibm-granite-granite-3.3-2B-Instruct", "granite"},
        {"fireworks-ai-llama-3-firefunction-v2", "firefunction"},
        {"deepseek-ai-DeepSeek-V3.1", "deepseek-v3.1"},
        {"llama-cpp-deepseek-r1", "deepseek-r1"},
        {"moonshotai-Kimi-K2", "kimi-k2"},
        {"Qwen3-Coder", "qwen3-coder"},
        {"Qwen3.5-4B", "qwen3-coder"},
        {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "qwen3-coder"},
        {"StepFun3.5-Flash", "qwen3-coder"},
        {"ByteDance-Seed-OSS", "seed-oss"},
        {"GLM-4.6", "glm"},
        {"GLM-4.7-Flash", "glm"},
        {"inclusionai-ling-3.0-flash", "glm"},
        {"MiniMax-M2", "minimax-m2"},
        {"openai-gpt-oss-120b", "gpt-oss"},
        {"MiniMax-M1", nullptr},  // renders no tool-call convention this server parses
    };
    for (const auto& [file, name] : expected) {
        const std::string source = read(std::string(BASALT_CHAT_TEMPLATES_DIR) + "/templates/" + file + ".jinja");
        REQUIRE(!source.empty());
        const ToolConvention* c = tool_convention_for(source);
        INFO(file);
        if (name == nullptr)
            CHECK(c == nullptr);
        else
            CHECK((c != nullptr && std::string(c->name) == name));
    }
    CHECK(std::string(fallback_tool_convention().name) == "hermes");
}

TEST_CASE("tools: Hermes <tool_call> replies (content before, several calls, cut short, malformed)", "[tools]") {
    const ToolConvention& c = convention("hermes");
    Reply r = parse_all_ways(c,
                             "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                             "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, "
                             "\"b\": 2}}\n</tool_call>");
    CHECK(r.content == "Let me look.\n");
    REQUIRE(r.calls.size() == 2);
    check_call(r.calls[0], "get_weather", {{"city", "Paris"}});
    check_call(r.calls[1], "add", {{"a", 1}, {"b", 2}});
    CHECK(r.calls[0].id == "call_0");
    CHECK(r.calls[1].id == "call_1");

    // Arguments first, or as a JSON string; no closing marker.
    r = parse_all_ways(c, "<tool_call>{\"arguments\": \"{\\\"a\\\": 3}\", \"name\": \"add\"}");
    REQUIRE(r.calls.size() == 1);
    check_call(r.calls[0], "add", {{"a", 3}});
    CHECK(r.content.empty());

    // Cut short by the length limit: the call keeps the arguments so far.
    r = parse_all_ways(c, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1");
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].name == "add");
    CHECK(r.calls[0].arguments == "{\"a\": 1");

    // Not calls: the text stays content, byte for byte.
    for (const std::string text : {"<tool_call>\nnot json\n</tool_call> done",
                                   "<tool_call>{\"name\": \"rm_rf\", "
                                   "\"arguments\": {}}</tool_call>",
                                   "a <tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"name\": 5}",
                                   "plain text with <tool_ but no call",
                                   "<tool_call>{\"name\": \"add\", "
                                   "\"arguments\": [1]}</tool_call>"}) {
        INFO(text);
        r = parse_all_ways(c, text);
        CHECK(r.calls.empty());
        CHECK(r.content == text);
    }
    // A call after text after a call.
    r = parse_all_ways(c,
                       "<tool_call>{\"name\": \"add\", \"arguments\": {}}</tool_call> and <tool_call>{\"name\": "
                       "\"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>");
    REQUIRE(r.calls.size() == 2);
    CHECK(r.content == "and ");
}

TEST_CASE("tools: Llama 3 JSON replies (bare at the start, after <|python_tag|>; JSON later is content)", "[tools]") {
    const ToolConvention& c = convention("llama3-json");
    Reply r = parse_all_ways(c, "  {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}");
    REQUIRE(r.calls.size() == 1);
    check_call(r.calls[0], "get_weather", {{"city", "Rome"}});
    CHECK(r.content == "  ");
    r = parse_all_ways(c,
                       "<|python_tag|>{\"name\": \"add\", \"parameters\": {\"a\": 1}}; {\"name\": \"add\", "
                       "\"parameters\": {\"a\": 2}}");
    REQUIRE(r.calls.size() == 2);
    check_call(r.calls[1], "add", {{"a", 2}});
    r = parse_all_ways(c, "The answer is {\"name\": \"add\", \"parameters\": {}}");
    CHECK(r.calls.empty());
    CHECK(r.content == "The answer is {\"name\": \"add\", \"parameters\": {}}");
    r = parse_all_ways(c, "{not json at all}");
    CHECK(r.calls.empty());
    CHECK(r.content == "{not json at all}");
}

TEST_CASE("tools: Mistral, Granite, FireFunction lists and the name-then-arguments conventions", "[tools]") {
    Reply r = parse_all_ways(convention("mistral"),
                             "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
                             "\"abcDEF123\"}, {\"name\": \"add\", \"arguments\": {\"a\": 1}}]");
    REQUIRE(r.calls.size() == 2);
    check_call(r.calls[0], "get_weather", {{"city", "Paris"}});
    check_call(r.calls[1], "add", {{"a", 1}});
    CHECK(r.content.empty());
    // A bad item: the items before it count (a stream has reported them), the text from it on is content.
    r = parse_all_ways(convention("mistral"), "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {}}, 7]");
    REQUIRE(r.calls.size() == 1);
    CHECK(r.content == "7]");
    r = parse_all_ways(convention("mistral"), "[TOOL_CALLS]{\"name\": \"add\"}");
    CHECK(r.calls.empty());
    CHECK(r.content == "[TOOL_CALLS]{\"name\": \"add\"}");

    r = parse_all_ways(convention("granite"), "<|tool_call|>[{\"name\": \"add\", \"arguments\": {\"a\": 4}}]");
    REQUIRE(r.calls.size() == 1);
    check_call(r.calls[0], "add", {{"a", 4}});
    r = parse_all_ways(convention("firefunction"), " functools[{\"name\": \"add\", \"arguments\": {\"a\": 5}}]");
    REQUIRE(r.calls.size() == 1);
    CHECK(r.content == " ");

    r = parse_all_ways(convention("mistral-args"),
                       "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]add[ARGS]{\"a\": 1, \"b\": 2}");
    REQUIRE(r.calls.size() == 2);
    check_call(r.calls[1], "add", {{"a", 1}, {"b", 2}});
    r = parse_all_ways(convention("deepseek-v3.1"),
                       "Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": "
                       "\"Lima\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
    REQUIRE(r.calls.size() == 1);
    check_call(r.calls[0], "get_weather", {{"city", "Lima"}});
    CHECK(r.content == "Sure.");
    r = parse_all_ways(convention("deepseek-r1"),
                       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>add\n```json\n{\"a\": "
                       "9}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
    REQUIRE(r.calls.size() == 1);
    check_call(r.calls[0], "add", {{"a", 9}});
    r = parse_all_ways(convention("kimi-k2"),
                       "<|tool_calls_section_begin|><|tool_call_begin|>functions.add:0<|tool_call_argument_begin|>{"
                       "\"a\": 1}<|tool_call_end|><|tool_call_begin|>functions.get_weather:1<|tool_call_argument_"
                       "begin|>{\"city\": \"Kyiv\"}<|tool_call_end|><|tool_calls_section_end|>");
    REQUIRE(r.calls.size() == 2);
    check_call(r.calls[1], "get_weather", {{"city", "Kyiv"}});
    r = parse_all_ways(convention("mistral-args"), "[TOOL_CALLS]unknown[ARGS]{}");
    CHECK(r.calls.empty());
    CHECK(r.content == "[TOOL_CALLS]unknown[ARGS]{}");
}

TEST_CASE("tools: the tool_choice grammar of each convention matches the reply its parser reads", "[tools]") {
    struct Case {
        const char* convention;
        const char* reply;  // as the grammar writes it (one call of each tool where the convention allows two)
        bool open_in_text;
    };
    const Case cases[] = {
        {"hermes",
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n"
         "{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>",
         true},
        {"llama3-json", "{\"name\": \"add\", \"parameters\": {\"a\": 1}}", true},
        {"mistral",
         "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"add\", "
         "\"arguments\": {\"a\": 1}}]",
         true},
        {"mistral", "[{\"name\": \"add\", \"arguments\": {\"a\": 1}}]", false},
        {"mistral-args", "[TOOL_CALLS]add[ARGS]{\"a\": 1}[TOOL_CALLS]get_weather[ARGS]{\"city\": \"x\"}", true},
        {"granite", "<|tool_call|>[{\"name\": \"add\", \"arguments\": {\"a\": 1}}]", true},
        {"deepseek-v3.1",
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>add<｜tool▁sep｜>{\"a\": "
         "1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
         true},
        {"deepseek-r1",
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>add\n```json\n{\"a\": "
         "1}\n```<｜tool▁call▁end｜><｜"
         "tool▁calls▁end｜>",
         true},
        {"kimi-k2",
         "<|tool_calls_section_begin|><|tool_call_begin|>functions.add:0<|tool_call_argument_begin|>{\"a\": "
         "1}<|tool_call_end|><|tool_calls_section_end|>",
         true},
    };
    for (const Case& k : cases) {
        INFO(k.convention << ": " << k.reply);
        const ToolConvention& c = convention(k.convention);
        const std::string grammar = tool_call_grammar(c, kTools, "", true, k.open_in_text);
        CHECK(grammar_matches(grammar, k.reply));
        const Reply r = parse_all_ways(c, k.reply, !k.open_in_text);
        CHECK(!r.calls.empty());
        CHECK(r.content.empty());
        // Wrong arguments (a string for an integer, an extra key) and free text do not match.
        CHECK_FALSE(grammar_matches(grammar, "Hello"));
    }
    // A named choice admits that tool only; without parallel calls, one call.
    const ToolConvention& h = convention("hermes");
    const std::string one = "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>";
    CHECK(grammar_matches(tool_call_grammar(h, kTools, "add", false, true), one));
    CHECK_FALSE(grammar_matches(tool_call_grammar(h, kTools, "get_weather", true, true), one));
    CHECK_FALSE(grammar_matches(tool_call_grammar(h, kTools, "", false, true), one + "\n" + one));
    CHECK(grammar_matches(tool_call_grammar(h, kTools, "", true, true), one + "\n" + one));
    CHECK_FALSE(grammar_matches(tool_call_grammar(h, kTools, "", true, true),
                                "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": \"1\"}}\n</tool_call>"));
    CHECK_FALSE(grammar_matches(tool_call_grammar(h, kTools, "", true, true),
                                "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"c\": 2}}\n</tool_call>"));
    // tool_choice auto: the same grammar, armed by the opening marker (none for Llama 3's bare JSON).
    const json lazy = json::parse(tool_call_grammar(h, kTools, "", true, true, true));
    CHECK(lazy["trigger"] == "<tool_call>");
    CHECK(grammar_matches(lazy.dump(), one));
    CHECK_THROWS(tool_call_grammar(convention("llama3-json"), kTools, "", true, true, true));
    // A parameters schema the converter refuses names its rule (serve maps it to tools[N].function.parameters).
    json bad = kTools;
    bad[1]["function"]["parameters"] = json{{"type", "object"}, {"allOf", json::array()}};
    try {
        basalt::grammar::compile_source("gbnf_schemas", tool_call_grammar(h, bad, "", true, true));
        FAIL("the grammar compiled");
    } catch (const basalt::grammar::GrammarError& e) {
        CHECK(std::string(e.what()).find("schema 'args-1'") != std::string::npos);
        CHECK(std::string(e.what()).find("allOf") != std::string::npos);
    }
}

TEST_CASE("tools: XML-argument replies (Qwen3-Coder, Seed-OSS, GLM, MiniMax-M2): values typed by the schema",
          "[tools]") {
    // Qwen3-Coder: one newline around each value is the format's; a string parameter is raw (digits stay a string),
    // the others JSON (text that is no JSON stays a string).
    Reply r = parse_all_ways(convention("qwen3-coder"),
                             "I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew <York>\n2\n"
                             "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=add>\n<parameter=a>\n1\n"
                             "</parameter>\n<parameter=b>\n[2, 3]\n</parameter>\n</function>\n</tool_call>");
    CHECK(r.content == "I'll check.\n");
    REQUIRE(r.calls.size() == 2);
    check_call(r.calls[0], "get_weather", {{"city", "New <York>\n2"}});
    check_call(r.calls[1], "add", {{"a", 1}, {"b", {2, 3}}});
    CHECK(r.calls[1].arguments == "{\"a\": 1, \"b\": [2,3]}");
    r = parse_all_ways(convention("qwen3-coder"),
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\n123\n</parameter>\n</function>\n"
                       "</tool_call><tool_call><function=add><parameter=a>one</parameter></function></tool_call>");
    REQUIRE(r.calls.size() == 2);
    check_call(r.calls[0], "get_weather", {{"city", "123"}});
    check_call(r.calls[1], "add", {{"a", "one"}});

    r = parse_all_ways(convention("seed-oss"),
                       "<seed:tool_call>\n<function=add>\n<parameter=a>5</parameter>\n</function>\n</seed:tool_call>");
    REQUIRE(r.calls.size() == 1);
    check_call(r.calls[0], "add", {{"a", 5}});

    // GLM-4.5/4.6 (one element a line) and GLM-4.7 (none between).
    r = parse_all_ways(convention("glm"),
                       "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n"
                       "<tool_call>add<arg_key>a</arg_key><arg_value>3</arg_value><arg_key>b</arg_key><arg_value>4"
                       "</arg_value></tool_call>");
    CHECK(r.content.empty());
    REQUIRE(r.calls.size() == 2);
    check_call(r.calls[0], "get_weather", {{"city", "Paris"}});
    check_call(r.calls[1], "add", {{"a", 3}, {"b", 4}});
    r = parse_all_ways(convention("glm"), "<tool_call>add\n</tool_call>");
    REQUIRE(r.calls.size() == 1);
    check_call(r.calls[0], "add", json::object());

    r = parse_all_ways(convention("minimax-m2"),
                       "Sure.\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Oslo"
                       "</parameter>\n</invoke>\n<invoke name=\"add\">\n<parameter name=\"a\">1</parameter>\n"
                       "<parameter name=\"b\">2</parameter>\n</invoke>\n</minimax:tool_call>");
    CHECK(r.content == "Sure.\n");
    REQUIRE(r.calls.size() == 2);
    check_call(r.calls[0], "get_weather", {{"city", "Oslo"}});
    check_call(r.calls[1], "add", {{"a", 1}, {"b", 2}});

    // Cut short: the call keeps the parameters closed so far.
    r = parse_all_ways(convention("qwen3-coder"),
                       "<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\n2");
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].name == "add");
    CHECK(r.calls[0].arguments == "{\"a\": 1");

    // Not calls (not XML, an unknown tool, a broken tag): the text stays content, byte for byte.
    const std::pair<const char*, const char*> bad[] = {
        {"qwen3-coder", "<tool_call>\nnot xml\n</tool_call> done"},
        {"qwen3-coder", "<tool_call>\n<function=rm_rf>\n</function>\n</tool_call>"},
        {"qwen3-coder", "<tool_call>\n<function=add>\n<oops>\n</function>\n</tool_call>"},
        {"qwen3-coder", "text with <tool_ but no call"},
        {"glm", "<tool_call>rm_rf\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"},
        {"glm", "<tool_call>add\n<arg_value>1</arg_value>\n</tool_call>"},
        {"minimax-m2", "<minimax:tool_call>\n<invoke name=add>\n</invoke>\n</minimax:tool_call>"},
        {"minimax-m2", "<minimax:tool_call>\nhello\n</minimax:tool_call>"},
        {"seed-oss", "<seed:tool_call>\n<function=add\n</seed:tool_call>"},
    };
    for (const auto& [name, text] : bad) {
        INFO(name << ": " << text);
        r = parse_all_ways(convention(name), text);
        CHECK(r.calls.empty());
        CHECK(r.content == text);
    }
}

TEST_CASE("tools: gpt-oss harmony calls (recipient in the channel or the role header; malformed stays content)",
          "[tools]") {
    const ToolConvention& c = convention("gpt-oss");
    const std::pair<const char*, const char*> calls[] = {
        {"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}",
         "get_weather"},
        {"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
         "get_weather"},
        {"to=functions.add<|channel|>commentary json<|message|>{\"a\": 1}", "add"},
        {"<|start|>assistant to=functions.add<|channel|>commentary json<|message|>{\"a\": 1}<|call|>", "add"},
        {"<|start|>assistant<|channel|>commentary to=functions.add<|message|>{\"a\": 1}", "add"},
        {"<|channel|>analysis to=functions.add  <|constrain|>json<|message|> {\"a\": 1}", "add"},
    };
    for (const auto& [text, name] : calls) {
        INFO(text);
        const Reply r = parse_all_ways(c, text);
        CHECK(r.content.empty());
        REQUIRE(r.calls.size() == 1);
        CHECK(r.calls[0].name == name);
        CHECK(json::parse(r.calls[0].arguments).is_object());
    }
    // Text before the call is content; a call cut short keeps its arguments so far.
    Reply r =
        parse_all_ways(c, "Checking. <|channel|>commentary to=functions.add <|constrain|>json<|message|>{\"a\": 7");
    CHECK(r.content == "Checking. ");
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].arguments == "{\"a\": 7");
    for (const std::string text :
         {"<|channel|>final<|message|>Hello there", "<|channel|>commentary<|message|>Let me look that up.<|end|>",
          "<|channel|>commentary to=functions.rm_rf <|constrain|>json<|message|>{}",
          "<|channel|>commentary to=browser.search <|constrain|>json<|message|>{}",
          "<|channel|>final to=functions.add<|message|>{}",
          "<|channel|>commentary to=functions.add <|constrain|>json<|message|>not json", "<|start|>user<|message|>hi",
          "the way to=functions.add is", "<|chan"}) {
        INFO(text);
        r = parse_all_ways(c, text);
        CHECK(r.calls.empty());
        CHECK(r.content == text);
    }
}

TEST_CASE("tools: the XML and harmony grammars match the replies their parsers read", "[tools]") {
    struct Case {
        const char* convention;
        const char* reply;
        bool matches;
    };
    const Case cases[] = {
        {"qwen3-coder",
         "<tool_call>\n<function=get_weather>\n<parameter=city>\na < b </param x\n</parameter>\n</function>\n"
         "</tool_call>\n<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>",
         true},
        {"qwen3-coder",
         "<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\n2\n</parameter>\n</function>\n"
         "</tool_call>",
         true},
        // A string value may not spell the closing tag; an integer is JSON; a required parameter is there.
        {"qwen3-coder",
         "<tool_call>\n<function=get_weather>\n<parameter=city>\nx</parameter>y\n</parameter>\n</function>\n"
         "</tool_call>",
         false},
        {"qwen3-coder", "<tool_call>\n<function=add>\n<parameter=a>\nx\n</parameter>\n</function>\n</tool_call>",
         false},
        {"qwen3-coder", "<tool_call>\n<function=add>\n</function>\n</tool_call>", false},
        {"seed-oss", "<seed:tool_call>\n<function=add>\n<parameter=a>1</parameter>\n</function>\n</seed:tool_call>",
         true},
        {"glm",
         "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n<tool_call>add\n"
         "<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n<arg_key>b</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
         true},
        {"minimax-m2",
         "<minimax:tool_call>\n<invoke name=\"add\">\n<parameter name=\"a\">1</parameter>\n</invoke>\n<invoke "
         "name=\"get_weather\">\n<parameter name=\"city\">Lima</parameter>\n</invoke>\n</minimax:tool_call>",
         true},
        {"gpt-oss", "<|channel|>commentary to=functions.add <|constrain|>json<|message|>{\"a\": 1}", true},
        {"gpt-oss",
         "<|channel|>commentary to=functions.add <|constrain|>json<|message|>{\"a\": 1}<|channel|>commentary "
         "to=functions.add <|constrain|>json<|message|>{\"a\": 1}",
         false},  // one call a turn
    };
    for (const Case& k : cases) {
        INFO(k.convention << ": " << k.reply);
        const ToolConvention& c = convention(k.convention);
        const std::string grammar = tool_call_grammar(c, kTools, "", true, true);
        CHECK(grammar_matches(grammar, k.reply) == k.matches);
        CHECK_FALSE(grammar_matches(grammar, "Hello"));
        if (!k.matches) continue;
        const Reply r = parse_all_ways(c, k.reply);
        CHECK(!r.calls.empty());
        CHECK(r.content.empty());
    }
    // A named choice; the lazy trigger of harmony is its commentary header, and control-token markers are listed.
    const ToolConvention& q = convention("qwen3-coder");
    CHECK_FALSE(grammar_matches(tool_call_grammar(q, kTools, "get_weather", true, true),
                                "<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n</function>\n"
                                "</tool_call>"));
    const json lazy =
        json::parse(tool_call_grammar(convention("gpt-oss"), kTools, "", true, true, true, {{200005, "<|channel|>"}}));
    CHECK(lazy["trigger"] == "<|channel|>commentary to=");
    CHECK(lazy["tokens"] == json{{"<|channel|>", 200005}});
    CHECK(grammar_matches(lazy.dump(),
                          "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
                          "{\"city\": \"Oslo\"}"));
    const std::vector<std::string> markers = convention_markers(convention("gpt-oss"));
    CHECK(std::find(markers.begin(), markers.end(), "<|message|>") != markers.end());
}

TEST_CASE("tools: the fallback block names every tool and the convention", "[tools]") {
    const std::string block = fallback_tools_prompt(kTools);
    CHECK(block.find("\"get_weather\"") != std::string::npos);
    CHECK(block.find("\"add\"") != std::string::npos);
    CHECK(block.find("<tool_call>") != std::string::npos);
}
