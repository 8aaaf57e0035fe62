// The byte scan that bounds JSON depth and keys per object before parsing (tools/basalt/json-limits.hpp), and the
// excerpts error messages quote.
#include <catch2/catch.hpp>

#include <string>

#include "json-limits.hpp"

using basalt::cli::check_json_limits;
using basalt::cli::excerpt;
using basalt::cli::JsonLimits;

TEST_CASE("json limits: depth counts arrays and objects, not brackets inside strings") {
    CHECK(check_json_limits(std::string(64, '[') + std::string(64, ']')).empty());
    CHECK(check_json_limits(std::string(65, '[') + std::string(65, ']')) == "JSON nested deeper than 64 levels");
    CHECK(check_json_limits(std::string(70000, '[')) == "JSON nested deeper than 64 levels");  // unbalanced too
    CHECK(check_json_limits("{\"a\":\"" + std::string(1000, '[') + "\"}").empty());
    CHECK(check_json_limits(R"({"a":"\"[[[[","b":[[]]})", JsonLimits{3, 10}).empty());
    CHECK_FALSE(check_json_limits(R"({"a":"\\",[[[]]]})", JsonLimits{3, 10}).empty());  // \\ ends in the string
}

TEST_CASE("json limits: keys per object, not elements per array or commas in strings") {
    std::string obj = "{";
    for (int i = 0; i < 1025; ++i) obj += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
    CHECK(check_json_limits(obj + "}") == "a JSON object with more than 1024 keys");
    std::string arr = "[";
    for (int i = 0; i < 5000; ++i) arr += i ? ",1" : "1";
    CHECK(check_json_limits(arr + "]").empty());
    CHECK(check_json_limits("{\"a\":\"" + std::string(5000, ',') + "\"}").empty());
    CHECK(check_json_limits(R"({"a":[1,2,3],"b":{"c":1,"d":2}})", JsonLimits{8, 2}).empty());
    CHECK_FALSE(check_json_limits(R"({"a":1,"b":2,"c":3})", JsonLimits{8, 2}).empty());
}

TEST_CASE("json limits: excerpts are cut at a character boundary") {
    CHECK(excerpt("short") == "short");
    CHECK(excerpt(std::string(100, 'x'), 10) == std::string(10, 'x') + "...");
    CHECK(excerpt("aaaaaaaaa\xC3\xA9", 10) == "aaaaaaaaa...");  // é (2 bytes) would straddle byte 10
    CHECK(basalt::cli::value_excerpt(nlohmann::ordered_json::array({1, 2, 3}), 4) == "[1,2...");
}
