// `basalt embed`: embeddings of texts through the engine (docs/embeddings.md). Inputs are the positional texts, or
// one per line of --input FILE (- : stdin); all are submitted at once, so the engine batches them (ragged, no
// padding). Prints one line of values per input, or with --json OpenAI's embeddings response shape.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "engine-setup.hpp"

namespace basalt::cli {
namespace {

int32_t pooling_value(const std::string& name) {
    static const std::pair<const char*, int32_t> kNames[] = {
        {"model", BASALT_POOLING_MODEL}, {"none", BASALT_POOLING_NONE}, {"mean", BASALT_POOLING_MEAN},
        {"cls", BASALT_POOLING_CLS},     {"last", BASALT_POOLING_LAST}, {"rank", BASALT_POOLING_RANK}};
    for (const auto& [n, v] : kNames) {
        if (name == n) return v;
    }
    throw UsageError("--pooling '" + name + "' is not one of model, none, mean, cls, last, rank");
}

std::vector<std::string> read_inputs(const po::variables_map& vm) {
    std::vector<std::string> inputs;
    if (vm.count("text") != 0) inputs = vm["text"].as<std::vector<std::string>>();
    if (vm.count("input") != 0) {
        const std::string path = vm["input"].as<std::string>();
        std::ifstream file;
        if (path != "-") {
            file.open(path);
            if (!file) throw UsageError("--input '" + path + "' cannot be read");
        }
        std::istream& is = path == "-" ? std::cin : file;
        for (std::string line; std::getline(is, line);) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (!line.empty()) inputs.push_back(line);
        }
    }
    if (inputs.empty()) throw UsageError("no input: give texts, or --input FILE (one per line; - reads stdin)");
    return inputs;
}

int run_embed(const po::variables_map& vm, const GlobalOptions& g) {
    const int32_t pooling = pooling_value(vm["pooling"].as<std::string>());
    const std::string norm = vm["normalize"].as<std::string>();
    if (norm != "l2" && norm != "none") throw UsageError("--normalize '" + norm + "' is not l2 or none");
    const std::vector<std::string> inputs = read_inputs(vm);
    cpp::EngineOptions o = engine_options(vm, g);
    cpp::OpenEngine e = cpp::open_engine(o);
    std::vector<cpp::Request> requests;
    for (const std::string& text : inputs) {
        cpp::RequestParams r;
        r.prompt = text;
        r.flags = BASALT_REQUEST_EMBED;
        r.pooling = pooling;
        r.normalize = norm == "l2" ? BASALT_NORMALIZE_L2 : BASALT_NORMALIZE_NONE;
        r.dimensions = vm["dimensions"].as<uint32_t>();
        requests.push_back(e.engine.submit(r));
    }
    e.engine.run();
    const bool as_json = vm["json"].as<bool>();
    nlohmann::ordered_json data = nlohmann::ordered_json::array();
    uint64_t tokens = 0;
    int status = kExitOk;
    for (size_t i = 0; i < requests.size(); ++i) {
        if (requests[i].finish_reason() != BASALT_FINISH_STOP) {
            print_error("input " + std::to_string(i + 1) + ": " + requests[i].error());
            status = kExitError;
            continue;
        }
        tokens += requests[i].stats().prompt_tokens;
        const std::vector<float> v = requests[i].embedding();
        if (as_json) {
            data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", v}});
        } else {
            for (size_t k = 0; k < v.size(); ++k) std::printf(k ? " %.9g" : "%.9g", static_cast<double>(v[k]));
            std::printf("\n");
        }
    }
    if (as_json) {
        const nlohmann::ordered_json out = {{"object", "list"},
                                            {"data", std::move(data)},
                                            {"model", vm["model"].as<std::string>()},
                                            {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
        std::printf("%s\n", out.dump().c_str());
    }
    return status;
}

const Registrar kEmbed{
    Command{"embed", "embeddings of texts (embedding models such as bert)",
            "basalt embed -m MODEL [TEXT...] [--input FILE|-] [--pooling P] [--normalize l2|none] [--dimensions N] "
            "[--json]",
            [](po::options_description& d, po::positional_options_description& pos) {
                d.add_options()("model,m", po::value<std::string>()->required(), "GGUF embedding model")(
                    "text", po::value<std::vector<std::string>>(), "texts to embed")(
                    "input,i", po::value<std::string>(), "file of inputs, one per line (- : stdin)")(
                    "pooling", po::value<std::string>()->default_value("model"),
                    "model (the file's pooling_type), none (one vector per token), mean, cls, last, rank (the "
                    "rank head's scores)")("normalize", po::value<std::string>()->default_value("l2"),
                                           "l2 (unit length) or none")(
                    "dimensions", po::value<uint32_t>()->default_value(0),
                    "keep the first N values before normalising (Matryoshka models; 0: all)")(
                    "json", po::bool_switch(), "print OpenAI's embeddings response shape")(
                    "max-batch-tokens", int_option("max-batch-tokens", 1, 1 << 20),
                    "token budget of one step (default: --batch, 512)");
                add_session_options(d);
                pos.add("text", -1);
            },
            run_embed}};

}  // namespace
}  // namespace basalt::cli
