// The plugin host: every ABI case of the mock plugin gets a precise outcome and message.
#include <basalt/basalt.h>

#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using test::last_error;
using test::mock;

namespace fs = std::filesystem;

TEST_CASE("a current plugin loads and lists its components", "[plugin-host]") {
    test::Runtime rt;
    REQUIRE(rt.load(mock("current")) == BASALT_OK);
    REQUIRE(rt.count() == 2);
    // same name under two kinds is allowed; order is by kind, then name
    basalt_component_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_runtime_component_info(rt.rt, 0, &info) == BASALT_OK);
    CHECK(info.kind == BASALT_COMPONENT_SAMPLER);
    CHECK(std::string(info.name) == "mock");
    CHECK(std::string(info.description) == "mock sampler for ABI tests");
    CHECK(info.version_major == 0);
    CHECK(info.version_minor == 3);
    CHECK(info.version_patch == 1);
    CHECK(info.plugin_abi_major == BASALT_ABI_VERSION_MAJOR);
    CHECK(std::string(info.plugin_name) == "mock");
    CHECK(fs::equivalent(info.file, mock("current")));
    REQUIRE(basalt_runtime_component_info(rt.rt, 1, &info) == BASALT_OK);
    CHECK(info.kind == BASALT_COMPONENT_STEERING);
    CHECK(std::string(info.description).empty());
    CHECK(basalt_runtime_component_info(rt.rt, 2, &info) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("index 2 out of range (count 2)"));
}

TEST_CASE("component_info writes only up to the caller's struct_size", "[plugin-host]") {
    test::Runtime rt;
    REQUIRE(rt.load(mock("current")) == BASALT_OK);
    // A caller built against a smaller (older) basalt_component_info: the fields past it stay untouched.
    basalt_component_info info;
    std::memset(&info, 0xAB, sizeof(info));
    info.struct_size = offsetof(basalt_component_info, description);
    REQUIRE(basalt_runtime_component_info(rt.rt, 0, &info) == BASALT_OK);
    CHECK(std::string(info.name) == "mock");
    unsigned char tail[sizeof(info) - offsetof(basalt_component_info, description)];
    std::memcpy(tail, reinterpret_cast<const char*>(&info) + offsetof(basalt_component_info, description),
                sizeof(tail));
    for (unsigned char b : tail) CHECK(b == 0xAB);
}

TEST_CASE("loading the same file twice is a no-op", "[plugin-host]") {
    test::Runtime rt;
    REQUIRE(rt.load(mock("current")) == BASALT_OK);
    REQUIRE(rt.load(mock("current")) == BASALT_OK);
    CHECK(rt.count() == 2);
}

TEST_CASE("smaller tables (as an older minor writes them) load, and nothing past struct_size is touched",
          "[plugin-host]") {
    // The mock's accept/reset/clone entries and its shutdown lie past the struct_size it declares and
    // abort() if called: the host must use its defaults instead.
    test::Runtime rt;
    REQUIRE(rt.load(mock("small-tables")) == BASALT_OK);
    CHECK(rt.has(BASALT_COMPONENT_SAMPLER, "mock-small"));
    basalt_sampler* s = nullptr;
    REQUIRE(basalt_sampler_create(rt.rt, "mock-small", nullptr, &s) == BASALT_OK);
    CHECK(basalt_sampler_accept(s, 7) == BASALT_OK);
    CHECK(basalt_sampler_reset(s) == BASALT_OK);
    basalt_sampler* c = nullptr;
    REQUIRE(basalt_sampler_clone(s, &c) == BASALT_OK);  // default clone: create from the same params
    basalt_token_data data[3] = {{0, 1.f, 0.f}, {1, 2.f, 0.f}, {2, 3.f, 0.f}};
    basalt_candidates cands{sizeof(basalt_candidates), 0, data, 3, -1, 0, 0};
    REQUIRE(basalt_sampler_apply(c, &cands) == BASALT_OK);
    CHECK(cands.selected == 0);  // accept was a no-op: offset 0 + 0 accepted
    basalt_sampler_destroy(c);
    basalt_sampler_destroy(s);
}

TEST_CASE("a newer minor with larger tables loads, the host ignores what it does not know", "[plugin-host]") {
    test::Runtime rt;
    REQUIRE(rt.load(mock("newer-minor")) == BASALT_OK);
    basalt_component_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_runtime_component_info(rt.rt, 0, &info) == BASALT_OK);
    CHECK(info.plugin_abi_minor == BASALT_ABI_VERSION_MINOR + 1);
    basalt_sampler* s = nullptr;
    REQUIRE(basalt_sampler_create(rt.rt, "mock-next", nullptr, &s) == BASALT_OK);
    basalt_sampler_destroy(s);
}

TEST_CASE("a plugin built for a newer major refuses the host", "[plugin-host]") {
    test::Runtime rt;
    CHECK(rt.load(mock("newer-major")) == BASALT_ERR_ABI_MISMATCH);
    CHECK_THAT(last_error(), Contains("mock-newer-major.so") && Contains("needs Basalt ABI 2.x, host is 1." +
                                                                         std::to_string(BASALT_ABI_VERSION_MINOR)));
    CHECK(rt.count() == 0);
}

TEST_CASE("the host refuses a newer-major plugin that does not check itself", "[plugin-host]") {
    test::Runtime rt;
    CHECK(rt.load(mock("newer-major-lenient")) == BASALT_ERR_ABI_MISMATCH);
    CHECK_THAT(last_error(),
               Contains("mock-newer-major-lenient.so") && Contains("built for Basalt ABI 2.") &&
                   Contains(", but this host implements ABI 1." + std::to_string(BASALT_ABI_VERSION_MINOR)));
    CHECK(rt.count() == 0);
}

TEST_CASE("a library without basalt_plugin_init is refused", "[plugin-host]") {
    test::Runtime rt;
    CHECK(rt.load(mock("no-export")) == BASALT_ERR_PLUGIN);
    CHECK_THAT(last_error(), Contains("mock-no-export.so") && Contains("does not export basalt_plugin_init"));
}

TEST_CASE("an init that throws is contained", "[plugin-host]") {
    test::Runtime rt;
    CHECK(rt.load(mock("throws")) == BASALT_ERR_PLUGIN);
    CHECK_THAT(last_error(), Contains("mock-throws.so") && Contains("threw an exception: mock init exploded"));
    CHECK(rt.count() == 0);
}

TEST_CASE("an init that returns no descriptor is refused", "[plugin-host]") {
    test::Runtime rt;
    CHECK(rt.load(mock("returns-null")) == BASALT_ERR_PLUGIN);
    CHECK_THAT(last_error(), Contains("mock-returns-null.so") && Contains("returned success but no descriptor"));
}

TEST_CASE("an init failure carries the plugin's own message", "[plugin-host]") {
    test::Runtime rt;
    CHECK(rt.load(mock("init-fails")) == BASALT_ERR_PLUGIN);
    CHECK_THAT(last_error(), Contains("mock-init-fails.so") && Contains("BASALT_ERR_UNSUPPORTED") &&
                                 Contains("needs a device this machine lacks"));
}

TEST_CASE("a library listing the same component twice is refused", "[plugin-host]") {
    test::Runtime rt;
    CHECK(rt.load(mock("duplicate-in-lib")) == BASALT_ERR_DUPLICATE);
    CHECK_THAT(last_error(), Contains("mock-duplicate-in-lib.so") && Contains("lists sampler 'mock-dup' twice"));
    CHECK(rt.count() == 0);
}

TEST_CASE("a component name already provided by another file is refused, naming both files", "[plugin-host]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::greedy_plugin()) == BASALT_OK);
    CHECK(rt.load(mock("duplicate-of-greedy")) == BASALT_ERR_DUPLICATE);
    CHECK_THAT(last_error(), Contains("mock-duplicate-of-greedy.so") &&
                                 Contains("sampler 'greedy' is already provided by") &&
                                 Contains("basalt-sampler-greedy.so"));
    CHECK(rt.count() == 1);
}

TEST_CASE("a table missing a required entry is refused", "[plugin-host]") {
    test::Runtime rt;
    CHECK(rt.load(mock("bad-table")) == BASALT_ERR_PLUGIN);
    CHECK_THAT(last_error(), Contains("mock-bad-table.so") && Contains("sampler 'mock-bad'") &&
                                 Contains("required entry 'apply' NULL"));
}

TEST_CASE("a component of an unknown kind is skipped with a warning, the rest loads", "[plugin-host]") {
    test::LogCapture logs;
    test::Runtime rt;
    REQUIRE(rt.load(mock("unknown-kind")) == BASALT_OK);
    CHECK(rt.count() == 1);
    CHECK(rt.has(BASALT_COMPONENT_SAMPLER, "mock-future"));
    CHECK(logs.contains("mock-unknown-kind.so", "unknown kind 99"));
}

TEST_CASE("a file that is not a library, a folder, or a missing file are refused", "[plugin-host]") {
    test::Runtime rt;
    CHECK(rt.load(std::string(BASALT_TEST_MOCK_DIR) + "/not-a-library.so") == BASALT_ERR_FORMAT);
    CHECK_THAT(last_error(), Contains("not-a-library.so") && Contains("cannot be loaded as a shared library"));
    CHECK(rt.load(std::string(BASALT_TEST_MOCK_DIR) + "/does-not-exist.so") == BASALT_ERR_NOT_FOUND);
    CHECK_THAT(last_error(), Contains("does-not-exist.so': no such file"));
    CHECK(rt.load(BASALT_TEST_MOCK_DIR) == BASALT_ERR_FORMAT);
    CHECK_THAT(last_error(), Contains("not a regular file"));
    CHECK(rt.load("") == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_runtime_load_plugin(rt.rt, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_runtime_load_plugin(nullptr, "x") == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(rt.count() == 0);
}

TEST_CASE("default discovery finds the plugins beside libbasalt", "[plugin-host]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    CHECK(rt.has(BASALT_COMPONENT_SAMPLER, "greedy"));
    CHECK(fs::equivalent(basalt_default_plugin_dir(), BASALT_TEST_PLUGIN_DIR));
}

TEST_CASE("BASALT_PLUGIN_PATH discovery loads good plugins and skips bad ones with warnings", "[plugin-host]") {
    // A folder holding good and bad plugins, plus a file entry and a missing entry.
    const fs::path dir = fs::temp_directory_path() / ("basalt-discovery-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(mock("current"), dir / "good.so");
    fs::copy_file(mock("throws"), dir / "throws.so");
    fs::copy_file(mock("newer-major-lenient"), dir / "v2.so");
    fs::copy_file(std::string(BASALT_TEST_MOCK_DIR) + "/not-a-library.so", dir / "text.so");
    std::ofstream(dir / "README.txt") << "not a plugin, and not named like one\n";
    const std::string path = dir.string() + ":" + mock("unknown-kind") + "::" + (dir / "missing").string();
    ::setenv("BASALT_PLUGIN_PATH", path.c_str(), 1);

    test::LogCapture logs;
    {
        test::Runtime rt(BASALT_RUNTIME_NO_DEFAULT_PLUGINS);
        CHECK(rt.has(BASALT_COMPONENT_SAMPLER, "mock"));
        CHECK(rt.has(BASALT_COMPONENT_STEERING, "mock"));
        CHECK(rt.has(BASALT_COMPONENT_SAMPLER, "mock-future"));
        CHECK(rt.count() == 3);
    }
    CHECK(logs.contains("throws.so", "threw an exception"));
    CHECK(logs.contains("v2.so", "built for Basalt ABI 2."));
    CHECK(logs.contains("text.so", "cannot be loaded as a shared library"));
    CHECK(logs.contains("missing", "does not exist"));
    CHECK_FALSE(logs.contains("README.txt"));
    ::unsetenv("BASALT_PLUGIN_PATH");
    fs::remove_all(dir);
}

TEST_CASE("runtime_create validates its parameters", "[plugin-host]") {
    basalt_runtime* rt = nullptr;
    CHECK(basalt_runtime_create(nullptr, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    basalt_runtime_params p{};
    p.struct_size = 2;
    CHECK(basalt_runtime_create(&p, &rt) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(rt == nullptr);
    CHECK_THAT(last_error(), Contains("struct_size 2 is too small"));
    basalt_runtime_destroy(nullptr);
}

TEST_CASE("find_component names what is available", "[plugin-host]") {
    test::Runtime rt;
    REQUIRE(rt.load(mock("current")) == BASALT_OK);
    size_t index = 99;
    CHECK(basalt_runtime_find_component(rt.rt, BASALT_COMPONENT_SAMPLER, "nope", &index) == BASALT_ERR_NOT_FOUND);
    CHECK(index == 99);
    CHECK_THAT(last_error(), Contains("no sampler named 'nope' is loaded (available: mock)"));
    CHECK(basalt_runtime_find_component(rt.rt, BASALT_COMPONENT_BACKEND, "cpu", &index) == BASALT_ERR_NOT_FOUND);
    CHECK_THAT(last_error(), Contains("(available: none)"));
}
