// basalt serve's chat templates (recognition and rendering) and OpenAI request parsing (sampler chains, checks).
#include <catch2/catch.hpp>

#include "chat-template.hpp"
#include "openai-request.hpp"

using namespace basalt::serve;

namespace {

const std::vector<ChatMessage> kConv = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};

ChatTemplate family(TemplateFamily f) {
    ChatTemplate t;
    t.family = f;
    return t;
}

}  // namespace

TEST_CASE("chat templates: recognised from the GGUF's Jinja by each family's tokens") {
    ChatTemplate t;
    // Fragments as the families' published templates contain them.
    REQUIRE(
        template_from_jinja("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                            "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}",
                            t));
    CHECK(t.family == TemplateFamily::ChatML);
    REQUIRE(
        template_from_jinja("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
                            "message['content'] | trim + '<|eot_id|>' }}",
                            t));
    CHECK(t.family == TemplateFamily::Llama3);
    REQUIRE(template_from_jinja(
        "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}", t));
    CHECK(t.family == TemplateFamily::Gemma);
    REQUIRE(
        template_from_jinja("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
                            "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}{% endfor %}",
                            t));
    CHECK(t.family == TemplateFamily::Mistral);
    REQUIRE(
        template_from_jinja("{% if message['role'] == 'user' %}{{'<|user|>' + '\\n' + message['content'] + "
                            "'<|end|>' + '\\n' + '<|assistant|>' + '\\n'}}{% endif %}",
                            t));
    CHECK(t.family == TemplateFamily::Phi3);
    REQUIRE(template_from_jinja("", t));
    CHECK(t.family == TemplateFamily::Plain);
    CHECK_FALSE(template_from_jinja("{{ '### Human: ' + message['content'] }}", t));
    CHECK(template_from_name("llama3", t));
    CHECK(t.family == TemplateFamily::Llama3);
    CHECK_FALSE(template_from_name("jinja", t));
}

TEST_CASE("chat templates: every family renders the conversation as its format defines") {
    CHECK(family(TemplateFamily::ChatML).render(kConv) ==
          "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
          "Hello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
    CHECK(family(TemplateFamily::Llama3).render(kConv) ==
          "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>"
          "\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user"
          "<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK(family(TemplateFamily::Gemma).render(kConv) ==
          "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
          "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
    CHECK(family(TemplateFamily::Mistral).render(kConv) ==
          "[INST] Be brief.\n\nHi [/INST]Hello.</s>[INST] Bye [/INST]");
    CHECK(family(TemplateFamily::Phi3).render(kConv) ==
          "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello.<|end|>\n<|user|>\nBye<|end|>\n"
          "<|assistant|>\n");
    CHECK(family(TemplateFamily::Plain).render(kConv) ==
          "System: Be brief.\nUser: Hi\nAssistant: Hello.\nUser: Bye\nAssistant:");
    CHECK(family(TemplateFamily::Plain).render(kConv, false) ==
          "System: Be brief.\nUser: Hi\nAssistant: Hello.\nUser: Bye\n");
    CHECK(family(TemplateFamily::Plain).stop_strings() == std::vector<std::string>{"\nUser:"});
    CHECK(std::string(family(TemplateFamily::ChatML).end_of_turn()) == "<|im_end|>");
}

TEST_CASE("chat templates: roles a family cannot express are refused naming the message") {
    const std::vector<ChatMessage> late_system = {{"user", "a"}, {"system", "b"}};
    CHECK_THROWS_WITH(family(TemplateFamily::Llama3).render(late_system),
                      Catch::Contains("messages[1]") && Catch::Contains("first"));
    const std::vector<ChatMessage> twice = {{"user", "a"}, {"user", "b"}};
    CHECK_THROWS_WITH(family(TemplateFamily::Mistral).render(twice), Catch::Contains("alternate"));
    const std::vector<ChatMessage> tool = {{"tool", "x"}};
    CHECK_THROWS_WITH(family(TemplateFamily::ChatML).render(tool), Catch::Contains("role 'tool'"));
}

TEST_CASE("openai requests: the sampler chain built from the OpenAI parameters") {
    ServedModel m;
    m.id = "target";
    m.n_vocab = 2048;
    m.n_ctx = 256;
    auto chain = [&](const char* body) { return parse_completion(json::parse(body), m).prompts.at(0).samplers; };
    CHECK(chain(R"({"prompt":"a","temperature":0})") == "greedy");
    CHECK(chain(R"({"prompt":"a"})") == "temp:1;dist");
    CHECK(chain(R"({"prompt":"a","temperature":0.8,"top_k":40,"top_p":0.9,"min_p":0.05})") ==
          "top_k:40;top_p:0.9;min_p:0.05;temp:0.8;dist");
    CHECK(
        chain(
            R"({"prompt":"a","temperature":0,"presence_penalty":0.5,"frequency_penalty":-1,"logit_bias":{"7":-100,"9":2.5}})") ==
        "logit_bias:7:-100,9:2.5;penalties:repeat=1,freq=-1,present=0.5,last_n=256;greedy");
    CHECK(chain(R"({"prompt":"a","samplers":"top_k:5;dist"})") == "top_k:5;dist");
    const GenerationRequest g = parse_completion(
        json::parse(
            R"({"prompt":["x",[1,2,3]],"n":2,"seed":9,"stop":"\n","max_tokens":7,"cache_salt":"t","decoder":"beam:width=2"})"),
        m);
    REQUIRE(g.prompts.size() == 2);
    CHECK(g.n == 2);
    CHECK(g.prompts[0].prompt == "x");
    CHECK(g.prompts[1].has_tokens);
    CHECK(g.prompts[1].tokens == std::vector<int32_t>{1, 2, 3});
    CHECK(g.prompts[0].seed == 9);
    CHECK(g.prompts[0].max_tokens == 7);
    CHECK(g.prompts[0].stop == std::vector<std::string>{"\n"});
    CHECK(g.prompts[0].cache_salt == "t");
    CHECK(g.prompts[0].decoder == "beam:width=2");
}

TEST_CASE("openai requests: refusals name the field") {
    ServedModel m;
    m.id = "target";
    m.n_vocab = 2048;
    m.n_ctx = 256;
    auto refused = [&](const char* body) -> std::string {
        try {
            parse_completion(json::parse(body), m);
        } catch (const ApiError& e) {
            return e.param + ": " + e.what();
        }
        return "accepted";
    };
    CHECK_THAT(refused(R"({"prompt":"a","temperature":3})"), Catch::StartsWith("temperature: "));
    CHECK_THAT(refused(R"({"prompt":"a","max_tokens":257})"), Catch::StartsWith("max_tokens: "));
    CHECK_THAT(refused(R"({"prompt":[1,2048]})"), Catch::StartsWith("prompt: "));
    CHECK_THAT(refused(R"({"prompt":"a","zzz":1})"), Catch::Contains("unknown field 'zzz'"));
    CHECK_THAT(refused(R"({"prompt":"a","samplers":"greedy","top_k":3})"), Catch::StartsWith("top_k: "));
    CHECK(refused(R"({"prompt":"a","logprobs":2})") == "accepted");
    CHECK_THAT(refused(R"({"prompt":"a","logprobs":21})"), Catch::StartsWith("logprobs: "));
    CHECK_THAT(refused(R"({"prompt":"a","logprobs":true})"), Catch::StartsWith("logprobs: "));
    CHECK_THAT(refused(R"({"prompt":"a","top_logprobs":2})"), Catch::StartsWith("top_logprobs: "));
    CHECK_THAT(refused(R"({"prompt":"a","logprobs":1,"decoder":"beam:width=2"})"),
               Catch::StartsWith("logprobs: ") && Catch::Contains("decoder 'beam:width=2'"));
    {
        const GenerationRequest g = parse_completion(json::parse(R"({"prompt":"a","logprobs":3})"), m);
        CHECK(g.logprobs == 3);
        CHECK((g.prompts.at(0).flags & BASALT_REQUEST_LOGPROBS) != 0);
        CHECK(g.prompts.at(0).n_top_logprobs == 3);
        CHECK(parse_completion(json::parse(R"({"prompt":"a"})"), m).logprobs == -1);
    }
    CHECK_THAT(refused(R"({"model":"other","prompt":"a"})"), Catch::Contains("does not exist"));
    CHECK_THROWS_AS(parse_body("{\"prompt\":\"\xff\"}"), ApiError);
    CHECK_THROWS_AS(parse_body("[]"), ApiError);
}

TEST_CASE("openai requests: logit_bias keys are decimal token ids, each token named once") {
    ServedModel m;
    m.id = "target";
    m.n_vocab = 2048;
    m.n_ctx = 256;
    auto refused = [&](const char* body) -> std::string {
        try {
            parse_completion(json::parse(body), m);
        } catch (const ApiError& e) {
            return e.param + ": " + e.what();
        }
        return "accepted";
    };
    CHECK(refused(R"({"prompt":"a","logit_bias":{"5":1,"05":2}})") ==
          "logit_bias: 'logit_bias' names token 5 twice ('5' and '05')");
    CHECK(refused(R"({"prompt":"a","logit_bias":{"5":1,"0005":2}})") ==
          "logit_bias: 'logit_bias' names token 5 twice ('5' and '0005')");
    CHECK_THAT(refused(R"({"prompt":"a","logit_bias":{" 5":1}})"), Catch::Contains("not ' 5'"));
    CHECK_THAT(refused(R"({"prompt":"a","logit_bias":{"+5":1}})"), Catch::Contains("not '+5'"));
    CHECK(refused(R"({"prompt":"a","logit_bias":{"5":1,"6":2}})") == "accepted");
}

TEST_CASE("openai requests: chat messages go through the template with its stops") {
    ServedModel m;
    m.id = "target";
    m.n_vocab = 2048;
    m.n_ctx = 256;
    const GenerationRequest g = parse_chat(
        json::parse(
            R"({"messages":[{"role":"developer","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}]})"),
        m);
    REQUIRE(g.prompts.size() == 1);
    CHECK(g.prompts[0].prompt == "System: s\nUser: hi\nAssistant:");
    CHECK(g.prompts[0].stop == std::vector<std::string>{"\nUser:"});
    CHECK(g.prompts[0].max_tokens == -1);
    CHECK((g.prompts[0].flags & BASALT_REQUEST_PARSE_SPECIAL) != 0);
}
