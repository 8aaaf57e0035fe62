// Logging: levels, names, the embedder callback, and plugin messages routed through the host table.
#include <basalt/basalt.h>

#include "test-support.hpp"

using Catch::Matchers::Contains;

TEST_CASE("log level names parse and bad names are rejected", "[log]") {
    basalt_log_level l = BASALT_LOG_OFF;
    CHECK(basalt_log_level_from_name("debug", &l) == BASALT_OK);
    CHECK(l == BASALT_LOG_DEBUG);
    CHECK(basalt_log_level_from_name("warn", &l) == BASALT_OK);
    CHECK(l == BASALT_LOG_WARN);
    CHECK(basalt_log_level_from_name("verbose", &l) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(l == BASALT_LOG_WARN);
    CHECK_THAT(test::last_error(), Contains("unknown log level 'verbose'"));
}

TEST_CASE("the callback receives lines at or above the level only", "[log]") {
    test::LogCapture logs(BASALT_LOG_ERROR);
    test::Runtime rt;
    CHECK(rt.load(test::mock("unknown-kind")) == BASALT_OK);  // emits a warning, below ERROR
    CHECK(logs.lines.empty());
    basalt_log_set_level(BASALT_LOG_DEBUG);
    CHECK(basalt_log_get_level() == BASALT_LOG_DEBUG);
    test::Runtime rt2;
    CHECK(rt2.load(test::mock("current")) == BASALT_OK);
    CHECK(logs.contains("registered sampler 'mock' v0.3.1"));
}
