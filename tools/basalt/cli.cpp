#include "cli.hpp"

#include <cstdio>
#include <iostream>
#include <string>

#include "progress-bar.hpp"

namespace basalt::cli {

po::typed_value<long long>* int_option(const char* name, long long lo, long long hi) {
    return po::value<long long>()->notifier([name, lo, hi](long long v) {
        if (v < lo || v > hi) {
            throw po::error("the argument ('" + std::to_string(v) + "') for option '--" + name + "' is out of range (" +
                            std::to_string(lo) + ".." + std::to_string(hi) + ")");
        }
    });
}

std::vector<Command>& commands() {
    static std::vector<Command> c;
    return c;
}

po::options_description global_options(GlobalOptions& g) {
    po::options_description d("Global options");
    d.add_options()("help,h", "show help")("plugin", po::value(&g.plugins)->composing(),
                                           "load a plugin library (repeatable)")(
        "log-level", po::value(&g.log_level), "trace|debug|info|warn|error|off (default: $BASALT_LOG or warn)")(
        "no-default-plugins", po::bool_switch(&g.no_default_plugins),
        "do not load the plugins installed beside libbasalt")(
        "no-progress", po::bool_switch(&g.no_progress),
        "no progress bars (they are drawn on stderr only when it is a terminal)");
    return d;
}

Runtime::Runtime(const GlobalOptions& g) {
    basalt_runtime_params params{};
    params.struct_size = sizeof(params);
    params.flags = g.no_default_plugins ? static_cast<uint32_t>(BASALT_RUNTIME_NO_DEFAULT_PLUGINS) : 0U;
    basalt_runtime* rt = nullptr;
    if (basalt_runtime_create(&params, &rt) != BASALT_OK) {
        print_error(basalt_last_error());
        return;
    }
    for (const auto& p : g.plugins) {
        if (basalt_runtime_load_plugin(rt, p.c_str()) != BASALT_OK) {
            print_error(basalt_last_error());
            basalt_runtime_destroy(rt);
            return;
        }
    }
    rt_ = rt;
}

Runtime::~Runtime() {
    basalt_runtime_destroy(rt_);
}

void print_error(std::string_view message) {
    tools::clear_progress_line();  // a bar left by work that failed half-way
    std::cerr << "basalt: error: " << message << '\n';
}

void Json::separator() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_.empty()) {
        if (!first_.back()) os_ << ',';
        first_.back() = false;
    }
}

Json& Json::begin_object() {
    separator();
    os_ << '{';
    first_.push_back(true);
    return *this;
}

Json& Json::end_object() {
    first_.pop_back();
    os_ << '}';
    return *this;
}

Json& Json::begin_array() {
    separator();
    os_ << '[';
    first_.push_back(true);
    return *this;
}

Json& Json::end_array() {
    first_.pop_back();
    os_ << ']';
    return *this;
}

Json& Json::key(std::string_view k) {
    value(k);
    os_ << ':';
    after_key_ = true;
    return *this;
}

Json& Json::value(std::string_view s) {
    separator();
    os_ << '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                os_ << "\\\"";
                break;
            case '\\':
                os_ << "\\\\";
                break;
            case '\n':
                os_ << "\\n";
                break;
            case '\r':
                os_ << "\\r";
                break;
            case '\t':
                os_ << "\\t";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof(buf), "\\u%04x", c);
                    os_ << buf;
                } else {
                    os_ << static_cast<char>(c);
                }
        }
    }
    os_ << '"';
    return *this;
}

Json& Json::value(long long n) {
    separator();
    os_ << n;
    return *this;
}

Json& Json::value(bool b) {
    separator();
    os_ << (b ? "true" : "false");
    return *this;
}

}  // namespace basalt::cli
