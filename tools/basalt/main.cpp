// basalt: the command-line front end. Global options may appear before or after the subcommand.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "progress-bar.hpp"

namespace {

using namespace basalt::cli;

void print_overview(std::ostream& os) {
    os << "usage: basalt [global options] <command> [options]\n\ncommands:\n";
    for (const auto& c : commands())
        os << "  " << c.name << std::string(12 - std::min<size_t>(c.name.size(), 11), ' ') << c.summary << '\n';
    os << "  help        show help for a command\n\n";
    GlobalOptions g;
    os << global_options(g)
       << "\nenvironment: BASALT_LOG (log level), BASALT_PLUGIN_PATH (':'-separated plugin "
          "folders or files),\n  BASALT_PROGRESS_DELAY_MS (how long work runs before its progress bar appears; "
          "default 250)\n";
}

const Command* find_command(const std::string& name) {
    for (const auto& c : commands()) {
        if (c.name == name) return &c;
    }
    return nullptr;
}

// Index of the subcommand token in args, skipping global options and their values; -1 if none.
int find_command_index(const std::vector<std::string>& args) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--plugin" || a == "--log-level") {
            ++i;
            continue;
        }
        if (!a.empty() && a[0] == '-') continue;
        return static_cast<int>(i);
    }
    return -1;
}

void print_command_help(const Command& c, std::ostream& os) {
    GlobalOptions g;
    po::options_description own("Options");
    po::positional_options_description pos;
    c.add_options(own, pos);
    os << "usage: " << c.usage << "\n\n" << c.summary << "\n\n" << own << '\n' << global_options(g);
}

int run(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    const int ci = find_command_index(args);
    if (ci < 0) {
        for (const auto& a : args) {
            if (a == "--help" || a == "-h") {
                print_overview(std::cout);
                return kExitOk;
            }
            if (a == "--version") args.emplace_back("version");
        }
        if (args.empty() || args.back() != "version") {
            print_overview(std::cerr);
            return kExitUsage;
        }
    }
    const size_t cmd_index = ci < 0 ? args.size() - 1 : static_cast<size_t>(ci);
    const std::string name = args[cmd_index];
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(cmd_index));

    if (name == "help") {
        if (args.empty()) {
            print_overview(std::cout);
            return kExitOk;
        }
        const Command* c = find_command(args[0]);
        if (c == nullptr) {
            print_error("unknown command '" + args[0] + "'; run 'basalt --help' for the list");
            return kExitUsage;
        }
        print_command_help(*c, std::cout);
        return kExitOk;
    }
    const Command* cmd = find_command(name);
    if (cmd == nullptr) {
        print_error("unknown command '" + name + "'; run 'basalt --help' for the list");
        return kExitUsage;
    }

    GlobalOptions g;
    po::options_description all;
    po::options_description own("Options");
    po::positional_options_description pos;
    cmd->add_options(own, pos);
    all.add(own).add(global_options(g));
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
        // --help wins over what notify checks (a required --model): `basalt run --help` prints run's help.
        if (vm.count("help") != 0U) {
            print_command_help(*cmd, std::cout);
            return kExitOk;
        }
        po::notify(vm);
    } catch (const po::error& e) {
        print_error("basalt " + name + ": " + e.what() + "; see 'basalt " + name + " --help'");
        return kExitUsage;
    }
    if (!g.log_level.empty()) {
        basalt_log_level level = BASALT_LOG_WARN;
        if (basalt_log_level_from_name(g.log_level.c_str(), &level) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitUsage;
        }
        basalt_log_set_level(level);
    }
    basalt::tools::init_progress(g.no_progress);
    show_library_progress(true);
    return cmd->run(vm, g);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const UsageError& e) {  // a bad option value, from whichever command: the one exit-code rule
        print_error(e.what());
        return kExitUsage;
    } catch (const std::exception& e) {  // a basalt::cpp::Error (its message) or another failure
        print_error(e.what());
        return kExitError;
    }
}
