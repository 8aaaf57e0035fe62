// --grammar / --json-schema / --regex / --json-object (grammar-options.hpp).
#include "grammar-options.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include "cli.hpp"

namespace po = boost::program_options;

namespace basalt::cli {
namespace {

std::string read_file(const std::string& option, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError("--" + option + ": cannot read '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

void add_grammar_options(po::options_description& d) {
    d.add_options()("grammar", po::value<std::string>(),
                    "structured output: a GBNF grammar file (llama.cpp's dialect, start rule root)")(
        "json-schema", po::value<std::string>(), "structured output: a JSON Schema file the output follows")(
        "regex", po::value<std::string>(), "structured output: a regular expression the whole output matches")(
        "json-object", po::bool_switch(), "structured output: any JSON object");
}

void apply_grammar_options(const po::variables_map& vm, RequestSpec& rq) {
    const bool json = vm.count("json-object") != 0 && vm["json-object"].as<bool>();
    const size_t given = vm.count("grammar") + vm.count("json-schema") + vm.count("regex") + (json ? 1 : 0);
    if (given > 1) throw UsageError("give one of --grammar, --json-schema, --regex and --json-object");
    if (vm.count("grammar") != 0) {
        rq.grammar_kind = BASALT_GRAMMAR_GBNF;
        rq.grammar = read_file("grammar", vm["grammar"].as<std::string>());
    } else if (vm.count("json-schema") != 0) {
        rq.grammar_kind = BASALT_GRAMMAR_JSON_SCHEMA;
        rq.grammar = read_file("json-schema", vm["json-schema"].as<std::string>());
    } else if (vm.count("regex") != 0) {
        rq.grammar_kind = BASALT_GRAMMAR_REGEX;
        rq.grammar = vm["regex"].as<std::string>();
    } else if (json) {
        rq.grammar_kind = BASALT_GRAMMAR_JSON;
    }
}

}  // namespace basalt::cli
