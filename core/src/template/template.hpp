// A sandboxed Jinja interpreter for chat templates (docs/chat-templates.md). Template::parse reads the source once;
// render() evaluates it against a context (the caller's variables) with Hugging Face's environment: trim_blocks,
// lstrip_blocks, loop controls, raise_exception, strftime_now, tojson as transformers defines it. The interpreter
// reads no file, calls nothing outside itself and stops with a TemplateError naming line:column when a limit
// (steps, recursion depth, output bytes, time) is reached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "ast.hpp"
#include "value.hpp"

namespace basalt::tmpl {

struct Limits {
    uint64_t max_steps = 10'000'000;  // statements, expressions and loop iterations evaluated
    uint32_t max_depth = 100;         // nested macro calls
    size_t max_output = 16u << 20;    // bytes of rendered text (also caps any one string built)
    uint32_t max_ms = 2000;           // wall-clock time
};

struct RenderOptions {
    Limits limits;
    int64_t now_unix = -1;  // strftime_now's clock (UTC seconds); < 0: the current time
};

class Template {
  public:
    // Parses source. Throws TemplateError naming line:column. The result is immutable and thread-safe.
    static Template parse(std::string_view source);
    // Renders with context's keys as the template's variables (a dict; strings that came from data keep their
    // data ranges in the output). Throws TemplateError naming line:column (raise_exception, type errors, limits).
    // Thread-safe: each call has its own state.
    Str render(const Dict& context, const RenderOptions& options) const;

  private:
    std::shared_ptr<const Body> body_;
};

}  // namespace basalt::tmpl
