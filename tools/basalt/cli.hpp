// Shared pieces of the basalt CLI: the subcommand registry, global options, the runtime they configure,
// and a small JSON writer.
#pragma once

#include <basalt/basalt.hpp>

#include <cstdint>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options.hpp>

namespace basalt::cli {

namespace po = boost::program_options;

// Exit codes of the CLI, one rule for every command: a bad option value exits kExitUsage (the parser's checks,
// UsageError, and the names the library refuses by their text: sampler chain, decoder, chat template, tensor type);
// what fails while loading or running (a file, a plugin, a device, a backend's parameter, memory) exits kExitError.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;  // the request failed (bad file, plugin, model ...)
constexpr int kExitUsage = 2;  // the command line is wrong

// A bad command-line value found after parsing; main prints it and exits kExitUsage.
struct UsageError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// Values of the options every subcommand accepts.
struct GlobalOptions {
    std::vector<std::string> plugins;
    std::string log_level;
    bool no_default_plugins = false;
    bool no_progress = false;
};

// A subcommand: adds its options, then runs with the parsed values.
struct Command {
    std::string name;
    std::string summary;
    std::string usage;  // e.g. "basalt plugins [--json]"
    std::function<void(po::options_description&, po::positional_options_description&)> add_options;
    std::function<int(const po::variables_map&, const GlobalOptions&)> run;
};

// The registry; each cmd-*.cpp registers itself through a static Registrar.
std::vector<Command>& commands();
struct Registrar {
    explicit Registrar(Command c) { commands().push_back(std::move(c)); }
};

// An integer option that must lie in [lo, hi] (checked when the command line is parsed; read it with
// .as<long long>()). Outside it, parsing fails naming the option, the value and the range, with kExitUsage; this
// also catches a negative count that an unsigned option would have wrapped to a huge one. Caller owns nothing.
po::typed_value<long long>* int_option(const char* name, long long lo, long long hi);

// Shows the library's progress reports (weight upload, long prefills, quantization) as a progress bar on stderr when
// the process draws bars (tools/progress: stderr a terminal, no --no-progress); off: no reports. main turns it on for
// every command; a command whose timing it would disturb (bench) turns it off.
void show_library_progress(bool on);

// Options accepted by every subcommand (--plugin, --log-level, --no-default-plugins, --no-progress, --help).
po::options_description global_options(GlobalOptions& g);

// Prints "basalt: error: <message>" to stderr.
void print_error(std::string_view message);

// Parses "1,2,3" (spaces allowed); returns false after printing which entry is bad.
bool parse_ids(const std::string& s, std::vector<int32_t>& out);

// Minimal streaming JSON writer (objects, arrays, strings, numbers, booleans).
class Json {
  public:
    explicit Json(std::ostream& os) : os_(os) {}
    Json& begin_object();
    Json& end_object();
    Json& begin_array();
    Json& end_array();
    Json& key(std::string_view k);
    Json& value(std::string_view s);
    Json& value(const char* s) { return value(std::string_view(s == nullptr ? "" : s)); }
    Json& value(long long n);
    Json& value(bool b);

  private:
    void separator();
    std::ostream& os_;
    std::vector<bool> first_;  // per open container: no element written yet
    bool after_key_ = false;
};

}  // namespace basalt::cli
