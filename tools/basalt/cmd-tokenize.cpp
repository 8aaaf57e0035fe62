// `basalt tokenize` and `basalt detokenize`: text <-> token ids with a model's vocabulary.
#include <iostream>

#include "cli.hpp"
#include "engine-setup.hpp"

namespace basalt::cli {
namespace {

int run_tokenize(const po::variables_map& vm, const GlobalOptions& /*g*/) {
    const cpp::Model model(vm["model"].as<std::string>());
    uint32_t flags = 0;
    if (!vm["no-special"].as<bool>()) flags |= BASALT_TOKENIZE_ADD_SPECIAL;
    if (vm["parse-special"].as<bool>()) flags |= BASALT_TOKENIZE_PARSE_SPECIAL;
    std::vector<int32_t> ids;
    ids = model.tokenize(vm["text"].as<std::string>(), flags);
    if (vm["json"].as<bool>()) {
        Json j(std::cout);
        j.begin_array();
        for (int32_t id : ids) {
            j.begin_object();
            j.key("id").value(static_cast<long long>(id));
            j.key("piece").value(model.piece(id, true));
            j.end_object();
        }
        j.end_array();
        std::cout << '\n';
    } else if (vm["pieces"].as<bool>()) {
        for (int32_t id : ids) std::cout << id << "\t'" << model.piece(id, true) << "'\n";
    } else {
        for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? "," : "") << ids[i];
        std::cout << '\n';
    }
    return kExitOk;
}

int run_detokenize(const po::variables_map& vm, const GlobalOptions& /*g*/) {
    const cpp::Model model(vm["model"].as<std::string>());
    std::vector<int32_t> ids;
    if (!parse_ids(vm["ids"].as<std::string>(), ids)) return kExitUsage;
    const uint32_t flags = vm["special"].as<bool>() ? static_cast<uint32_t>(BASALT_DETOKENIZE_UNPARSE_SPECIAL) : 0U;
    std::string out(64, '\0');
    size_t len = 0;
    basalt_status st = basalt_detokenize(model.get(), ids.data(), ids.size(), flags, out.data(), out.size(), &len);
    if (st == BASALT_ERR_CAPACITY) {
        out.assign(len + 1, '\0');
        st = basalt_detokenize(model.get(), ids.data(), ids.size(), flags, out.data(), out.size(), &len);
    }
    if (st != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    out.resize(len);
    std::cout << out << '\n';
    return kExitOk;
}

const Registrar kTokenize{
    Command{"tokenize", "turn text into token ids",
            "basalt tokenize -m MODEL TEXT [--ids|--pieces|--json]\n\n"
            "Needs only the model's vocabulary: it works (exit status 0) on a file whose weights cannot run; "
            "'basalt inspect' says whether they can.",
            [](po::options_description& d, po::positional_options_description& pos) {
                d.add_options()("model,m", po::value<std::string>()->required(), "GGUF model or vocabulary file")(
                    "text", po::value<std::string>()->required(), "UTF-8 text")(
                    "ids", po::bool_switch(), "comma-separated ids (default)")("pieces", po::bool_switch(),
                                                                               "one line per token: id and text")(
                    "json", po::bool_switch(), "print JSON")("no-special", po::bool_switch(), "do not add BOS/EOS")(
                    "parse-special", po::bool_switch(), "read text like <s> as control tokens");
                pos.add("text", 1);
            },
            run_tokenize}};

const Registrar kDetokenize{
    Command{"detokenize", "turn token ids into text",
            "basalt detokenize -m MODEL 1,2,3 [--special]\n\nNeeds only the model's vocabulary, as tokenize.",
            [](po::options_description& d, po::positional_options_description& pos) {
                d.add_options()("model,m", po::value<std::string>()->required(), "GGUF model or vocabulary file")(
                    "ids", po::value<std::string>()->required(), "token ids, comma-separated")(
                    "special", po::bool_switch(), "render control tokens");
                pos.add("ids", 1);
            },
            run_detokenize}};

}  // namespace
}  // namespace basalt::cli
