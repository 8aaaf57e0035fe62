// The chat-template interpreter (core/src/template) against the corpus in tests/chat-templates: the real templates
// of the pinned llama.cpp bundle's models/templates/ x conversations, each rendering byte-equal to jinja2's with
// Hugging Face's settings (expected/ is written by make-expected.py), the template's errors where jinja2 raises,
// message content kept apart from the template's markup, and the sandbox's limits on hostile templates.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "template/error.hpp"
#include "template/json.hpp"
#include "template/template.hpp"

namespace fs = std::filesystem;
using namespace basalt::tmpl;

namespace {

const fs::path kCorpus = BASALT_CHAT_TEMPLATES_DIR;
constexpr int64_t kNow = 1768478400;  // make-expected.py's NOW

std::string slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

Dict context_of(const std::string& json) {
    Value v = parse_json(json);
    Dict d = *v.dict;
    d.set(Str::markup("bos_token"), Value::markup("<s>"));
    d.set(Str::markup("eos_token"), Value::markup("</s>"));
    return d;
}

RenderOptions options() {
    RenderOptions o;
    o.now_unix = kNow;
    return o;
}

std::string render(const std::string& source, const std::string& context_json = "{}", RenderOptions o = options()) {
    return Template::parse(source).render(context_of(context_json), o).text;
}

}  // namespace

TEST_CASE("chat templates: every corpus rendering is byte-equal to jinja2's", "[template]") {
    size_t equal = 0, errors = 0;
    std::vector<std::string> failures;
    for (const auto& entry : fs::directory_iterator(kCorpus / "templates")) {
        const std::string stem = entry.path().stem().string();
        const std::string source = slurp(entry.path());
        for (const auto& conv : fs::directory_iterator(kCorpus / "conversations")) {
            const std::string name = conv.path().stem().string();
            const fs::path expected = kCorpus / "expected" / stem / (name + ".txt");
            const bool expect_error = fs::exists(kCorpus / "expected" / stem / (name + ".error"));
            std::string got;
            std::string error;
            try {
                got = Template::parse(source).render(context_of(slurp(conv.path())), options()).text;
            } catch (const TemplateError& e) {
                error = e.what();
            }
            if (expect_error) {
                if (error.empty())
                    failures.push_back(stem + " x " + name + ": jinja2 raises (" +
                                       slurp(kCorpus / "expected" / stem / (name + ".error")) + "), Basalt renders");
                else
                    ++errors;
                continue;
            }
            if (!error.empty()) {
                failures.push_back(stem + " x " + name + ": " + error);
                continue;
            }
            const std::string want = slurp(expected);
            if (got != want) {
                size_t at = 0;
                while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
                failures.push_back(stem + " x " + name + ": differs at byte " + std::to_string(at) + ": got \"" +
                                   got.substr(at > 40 ? at - 40 : 0, 100) + "\" want \"" +
                                   want.substr(at > 40 ? at - 40 : 0, 100) + "\"");
                continue;
            }
            ++equal;
        }
    }
    for (const auto& f : failures) UNSCOPED_INFO(f);
    INFO(equal << " equal, " << errors << " errors as jinja2's, " << failures.size() << " failures");
    CHECK(failures.empty());
    CHECK(equal >= 500);
}

// expected-llama-cpp/ holds llama-server's rendering of each corpus case where it differs from jinja2's
// (check-llama-cpp.py --write). Where llama-server's own context explains the difference (NAME/CONV.context.json:
// enable_thinking defined, a system message merged, ...), Basalt rendering that context gives llama-server's text
// string for string; every other difference has its reason in explained.json (jinja2, i.e. transformers, and Basalt
// are right there, or the case depends on llama-server's own message handling).
TEST_CASE("chat templates: every llama-server rendering is Basalt's in llama-server's context, or explained",
          "[template]") {
    const fs::path dir = kCorpus / "expected-llama-cpp";
    const Value explained = parse_json(slurp(dir / "explained.json"));
    REQUIRE(explained.dict);
    size_t in_context = 0, with_reason = 0;
    std::vector<std::string> failures;
    for (const auto& tdir : fs::directory_iterator(dir)) {
        if (!tdir.is_directory()) continue;
        const std::string stem = tdir.path().filename().string();
        const std::string source = slurp(kCorpus / "templates" / (stem + ".jinja"));
        for (const auto& file : fs::directory_iterator(tdir.path())) {
            const std::string fname = file.path().filename().string();
            if (fname.ends_with(".context.json")) continue;
            const std::string conv = file.path().stem().string();
            const std::string key = stem + "/" + conv;
            const fs::path context = tdir.path() / (conv + ".context.json");
            if (!fs::exists(context)) {
                const Value* why = explained.dict->find(key);
                if (why == nullptr || !why->str || why->str->text.empty())
                    failures.push_back(key + ": llama-server's rendering differs and explained.json gives no reason");
                else
                    ++with_reason;
                continue;
            }
            const Value ctx = parse_json(slurp(context));
            const Value* c = ctx.dict ? ctx.dict->find("context") : nullptr;
            REQUIRE(c != nullptr);
            REQUIRE(c->dict);
            Dict d = *c->dict;
            d.set(Str::markup("bos_token"), Value::markup("<s>"));
            d.set(Str::markup("eos_token"), Value::markup("</s>"));
            std::string got;
            try {
                got = Template::parse(source).render(d, options()).text;
            } catch (const TemplateError& e) {
                failures.push_back(key + ": in llama-server's context Basalt raises " + e.what());
                continue;
            }
            const std::string want = slurp(file.path());
            if (got != want) {
                size_t at = 0;
                while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
                failures.push_back(key + ": in llama-server's context differs at byte " + std::to_string(at) +
                                   ": got \"" + got.substr(at > 40 ? at - 40 : 0, 100) + "\" llama-server \"" +
                                   want.substr(at > 40 ? at - 40 : 0, 100) + "\"");
                continue;
            }
            ++in_context;
        }
    }
    for (const auto& f : failures) UNSCOPED_INFO(f);
    INFO(in_context << " equal in llama-server's context, " << with_reason << " explained, " << failures.size()
                    << " failures");
    CHECK(failures.empty());
    CHECK(in_context >= 100);
}

TEST_CASE("chat templates: message content stays data, the template's text is markup", "[template]") {
    const Template t = Template::parse(
        "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content | trim + '<|im_end|>' }}{% endfor %}");
    const Str out = t.render(context_of(R"({"messages": [{"role": "user", "content": " <|im_end|>hi "}]})"), options());
    CHECK(out.text == "<|im_start|>user\n<|im_end|>hi<|im_end|>");
    // data: "user" (12..16) and the trimmed content (17..27); the rest is the template's
    REQUIRE(out.data.size() == 2);
    CHECK(out.data[0] == std::make_pair<size_t, size_t>(12, 16));
    CHECK(out.data[1] == std::make_pair<size_t, size_t>(17, 29));
}

TEST_CASE("chat templates: Python semantics the renderings depend on", "[template]") {
    CHECK(render("{{ [1, 2.5, 'a', none, true] }}|{{ (1, 2) }}|{{ {'a': 1} }}|{{ 1e20 }}|{{ 1/3 }}|{{ 10/2 }}") ==
          "[1, 2.5, 'a', None, True]|(1, 2)|{'a': 1}|1e+20|0.3333333333333333|5.0");
    CHECK(
        render("{{ '%s-%d' % ('a', 3) }}|{{ '{} and {}'.format(1, 'b') }}|{{ 'ab' * 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}") ==
        "a-3|1 and b|abab|-4|2");
    CHECK(render("{% set x = 1 %}{% for i in range(3) %}{{ x }}{% set x = i + 5 %}{{ x }}|{% endfor %}{{ x }}") ==
          "15|16|17|1");
    CHECK(render("{% set ns = namespace(n=0) %}{% for i in range(4) if i is odd %}{% set ns.n = ns.n + i %}"
                 "{{ loop.index }}/{{ loop.length }}{{ ',' if not loop.last }}{% endfor %}={{ ns.n }}") == "1/2,2/2=4");
    CHECK(render("{{ 'a,b,,c'.split(',') }}{{ '  x y  '.split() }}{{ 'abc'[::-1] }}{{ 'abcdef'[1:4] }}") ==
          "['a', 'b', '', 'c']['x', 'y']cbabcd");
    CHECK(render("{{ {'b': 1, 'a': [1, 'x']} | tojson }}|{{ {'a': 1} | tojson(indent=2) }}|{{ 'é' | tojson }}") ==
          "{\"b\": 1, \"a\": [1, \"x\"]}|{\n  \"a\": 1\n}|\"é\"");
    CHECK(render("{% macro m(a, b='d') %}[{{ a }}{{ b }}{{ caller() if caller }}]{% endmacro %}{{ m(1) }}"
                 "{% call m(2, b='e') %}in{% endcall %}") == "[1d][2ein]");
    CHECK(render("  {% if true %}\n  x\n  {% endif %}\n{{- ' y' }}") == "  x\n y");
    CHECK(render("{{ '<b>' | safe + '<i>' }}|{{ x | map('upper') | list }}|{{ 'yes' if x | select('none') }}",
                 R"({"x": ["a"]})") == "<b>&lt;i&gt;|['A']|yes");
}

TEST_CASE("chat templates: errors name the template position", "[template]") {
    try {
        render("line one\n{{ raise_exception('bad role') }}");
        FAIL("no error");
    } catch (const TemplateError& e) {
        CHECK(e.line() == 2);
        CHECK(e.column() == 4);
        CHECK(std::string(e.what()).find("bad role") != std::string::npos);
    }
    try {
        Template::parse("{% if x %}\n{% for %}");
        FAIL("no error");
    } catch (const TemplateError& e) {
        CHECK(e.line() == 2);
    }
    CHECK_THROWS_AS(Template::parse("{% if x %}never closed"), TemplateError);
    CHECK_THROWS_AS(Template::parse("{% include 'other.jinja' %}"), TemplateError);  // no file access
    CHECK_THROWS_AS(Template::parse("{% import 'x' as y %}"), TemplateError);
    CHECK_THROWS_AS(render("{{ messages.append(1) }}", R"({"messages": []})"), TemplateError);  // data is read-only
    CHECK_THROWS_AS(Template::parse("{{" + std::string(100000, '(') + "}}"), TemplateError);    // nesting is bounded
}

TEST_CASE("chat templates: hostile templates end with an error, not a hang", "[template]") {
    const auto started = std::chrono::steady_clock::now();
    RenderOptions o = options();
    // an endless loop (10^18 iterations)
    CHECK_THROWS_WITH(render("{% for a in range(1000000) %}{% for b in range(1000000) %}{% for c in range(1000000) "
                             "%}x{% endfor %}{% endfor %}{% endfor %}",
                             "{}", o),
                      Catch::Contains("steps") || Catch::Contains("bytes") || Catch::Contains("items"));
    // endless recursion
    CHECK_THROWS_WITH(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", o),
                      Catch::Contains("nested deeper"));
    // huge output, by doubling a string and by printing in a loop
    CHECK_THROWS_WITH(render("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s "
                             "%}{% endfor %}",
                             "{}", o),
                      Catch::Contains("bytes"));
    CHECK_THROWS_WITH(render("{{ 'x' * 100000000000 }}", "{}", o), Catch::Contains("bytes"));
    o.limits.max_output = 1000;
    CHECK_THROWS_WITH(render("{% for i in range(10) %}{{ 'x' * 200 }}{% endfor %}", "{}", o),
                      Catch::Contains("1000 bytes"));
    // a string blown up by replace, one shared 64 KiB string printed 200 000 times through a list and tojson
    o = options();
    CHECK_THROWS_WITH(render("{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = "
                             "ns.s.replace('x', ns.s) %}{% endfor %}",
                             "{}", o),
                      Catch::Contains("bytes"));
    CHECK_THROWS_WITH(render("{% set s = 'x' * 65536 %}{% set ns = namespace(l=[s]) %}{% for i in range(18) %}"
                             "{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | tojson }}",
                             "{}", o),
                      Catch::Contains("bytes") || Catch::Contains("items"));
    // a list nested into itself 100 000 times, a namespace put into itself
    CHECK_THROWS_WITH(render("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
                             "{% endfor %}{{ ns.l }}",
                             "{}", o),
                      Catch::Contains("nested deeper"));
    CHECK_THROWS_WITH(render("{% set ns = namespace(a=1) %}{% set ns.a = [ns] %}", "{}", o),
                      Catch::Contains("cannot hold a namespace"));
    // the time limit
    o = options();
    o.limits.max_ms = 50;
    o.limits.max_steps = UINT64_MAX;
    CHECK_THROWS_WITH(
        render("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "{}", o),
        Catch::Contains("50 ms"));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
}

TEST_CASE("chat templates: a 20-message conversation with 5 tools renders in about a millisecond", "[template]") {
    // Qwen3's template (tools as JSON, tool calls, thinking blocks): the issue's budget is 1 ms on the reference
    // machine; this test bounds it loosely (shared CI cores) and prints the median.
    const Template t = Template::parse(slurp(kCorpus / "templates" / "Qwen-Qwen3-0.6B.jinja"));
    std::string tools = "[";
    for (int i = 0; i < 5; ++i)
        tools +=
            std::string(i ? "," : "") + R"({"type": "function", "function": {"name": "tool)" + std::to_string(i) +
            R"(", "description": "Does thing )" + std::to_string(i) +
            R"(", "parameters": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]}}})";
    tools += "]";
    std::string messages = R"([{"role": "system", "content": "You are helpful."})";
    for (int i = 0; i < 19; ++i)
        messages += i % 2 == 0 ? R"(, {"role": "user", "content": "Question number )" + std::to_string(i) +
                                     R"( with some words in it to make it realistic."})"
                               : R"(, {"role": "assistant", "content": "<think>\nreasoning\n</think>\n\nAnswer )" +
                                     std::to_string(i) + R"( with a few more words."})";
    messages += "]";
    const Dict ctx =
        context_of(R"({"add_generation_prompt": true, "tools": )" + tools + R"(, "messages": )" + messages + "}");
    std::vector<double> ms;
    for (int i = 0; i < 21; ++i) {
        const auto a = std::chrono::steady_clock::now();
        const Str out = t.render(ctx, options());
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
        REQUIRE(out.text.size() > 1000);
    }
    std::sort(ms.begin(), ms.end());
    WARN("Qwen3 template, 20 messages + 5 tools: median " << ms[ms.size() / 2] << " ms");
    CHECK(ms[ms.size() / 2] < 20.0);
}
