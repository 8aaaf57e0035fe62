// Helpers shared by the unit tests: an owning runtime, paths of the mock plugins, and a log capture.
#pragma once

#include <basalt/basalt.h>

#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace test {

inline std::string mock(const std::string& variant) {
    return std::string(BASALT_TEST_MOCK_DIR) + "/mock-" + variant + ".so";
}
inline std::string greedy_plugin() {
    return std::string(BASALT_TEST_PLUGIN_DIR) + "/basalt-sampler-greedy.so";
}

// A runtime owned by the test; flags default to "load nothing implicitly".
struct Runtime {
    basalt_runtime* rt = nullptr;
    explicit Runtime(uint32_t flags = BASALT_RUNTIME_NO_DEFAULT_PLUGINS | BASALT_RUNTIME_NO_ENV_PLUGINS) {
        basalt_runtime_params p{};
        p.struct_size = sizeof(p);
        p.flags = flags;
        REQUIRE(basalt_runtime_create(&p, &rt) == BASALT_OK);
    }
    ~Runtime() { basalt_runtime_destroy(rt); }
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    basalt_status load(const std::string& path) { return basalt_runtime_load_plugin(rt, path.c_str()); }
    size_t count() const { return basalt_runtime_component_count(rt); }
    bool has(basalt_component_kind kind, const std::string& name) const {
        size_t i = 0;
        return basalt_runtime_find_component(rt, kind, name.c_str(), &i) == BASALT_OK;
    }
};

// Collects log lines while alive (restores stderr logging afterwards).
struct LogCapture {
    std::mutex mutex;
    std::vector<std::string> lines;
    basalt_log_level saved;
    explicit LogCapture(basalt_log_level level = BASALT_LOG_WARN) : saved(basalt_log_get_level()) {
        basalt_log_set_level(level);
        basalt_log_set_callback(
            [](basalt_log_level, const char* component, const char* message, void* user) {
                auto* self = static_cast<LogCapture*>(user);
                std::lock_guard lock(self->mutex);
                self->lines.push_back(std::string(component != nullptr ? component : "") + "|" + message);
            },
            this);
    }
    ~LogCapture() {
        basalt_log_set_callback(nullptr, nullptr);
        basalt_log_set_level(saved);
    }
    bool contains(const std::string& a, const std::string& b = "") {
        std::lock_guard lock(mutex);
        for (const auto& l : lines) {
            if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) return true;
        }
        return false;
    }
};

// An owned candidate array and its basalt_candidates view (selected = -1, unsorted).
struct Cands {
    std::vector<basalt_token_data> data;
    basalt_candidates c{};
    explicit Cands(std::vector<basalt_token_data> d, int32_t seq = 0) : data(std::move(d)) {
        c.struct_size = sizeof(c);
        c.seq_id = seq;
        c.data = data.data();
        c.size = data.size();
        c.selected = -1;
    }
    int32_t chosen() const { return c.selected < 0 ? -1 : data[static_cast<size_t>(c.selected)].id; }
    std::vector<int32_t> ids() const {
        std::vector<int32_t> out;
        for (size_t i = 0; i < c.size; ++i) out.push_back(data[i].id);
        return out;
    }
    float logit_of(int32_t id) const {
        for (size_t i = 0; i < c.size; ++i) {
            if (data[i].id == id) return data[i].logit;
        }
        return std::numeric_limits<float>::quiet_NaN();
    }
};

inline std::string last_error() {
    return basalt_last_error();
}

}  // namespace test
