#include "cli.hpp"

#include <algorithm>
#include <charconv>
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

void print_error(std::string_view message) {
    tools::clear_progress_line();  // a bar left by work that failed half-way
    std::cerr << "basalt: error: " << message << '\n';
}

bool parse_ids(const std::string& s, std::vector<int32_t>& out) {
    out.clear();
    if (s.find_first_not_of(" \t") == std::string::npos) {
        print_error("no token ids given (expected a list such as 1,2,3)");
        return false;
    }
    // Entries separated by commas (or by spaces alone, "1 2 3"); every entry must be an id.
    const bool commas = s.find(',') != std::string::npos;
    size_t i = 0;
    for (;;) {
        const size_t end = commas ? std::min(s.find(',', i), s.size()) : std::min(s.find(' ', i), s.size());
        size_t a = i, b = end;
        while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
        while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
        if (a == b) {
            if (!commas && end < s.size()) {  // runs of spaces between space-separated ids
                i = end + 1;
                continue;
            }
            if (commas || out.empty()) {
                print_error("an empty entry in the id list '" + s + "' (expected ids separated by commas, e.g. 1,2,3)");
                return false;
            }
        } else {
            int32_t v = 0;
            auto [p, ec] = std::from_chars(s.data() + a, s.data() + b, v);
            if (ec != std::errc() || p != s.data() + b) {
                print_error("'" + s.substr(a, b - a) + "' is not a token id");
                return false;
            }
            out.push_back(v);
        }
        if (end >= s.size()) break;
        i = end + 1;
    }
    return true;
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
