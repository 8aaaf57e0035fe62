// The errors of template parsing and rendering: every one names the template position (line:column, 1-based).
#pragma once

#include <stdexcept>
#include <string>

namespace basalt::tmpl {

// A template that cannot be parsed or rendered (syntax error, raise_exception, a type error, a limit exceeded).
class TemplateError : public std::runtime_error {
  public:
    TemplateError(int line, int column, const std::string& message, bool limit = false)
        : std::runtime_error("chat template " + std::to_string(line) + ":" + std::to_string(column) + ": " + message),
          line_(line),
          column_(column),
          message_(message),
          limit_(limit) {}
    int line() const { return line_; }
    int column() const { return column_; }
    const std::string& message() const { return message_; }
    // A sandbox limit (steps, depth, output bytes, time) ended the rendering.
    bool limit() const { return limit_; }

  private:
    int line_;
    int column_;
    std::string message_;
    bool limit_;
};

// An error inside a built-in (filter, test, method) without a position; the renderer adds the position of the
// expression that called it.
class EvalError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// A sandbox limit reached inside the renderer (reported as TemplateError::limit()).
class LimitError : public EvalError {
  public:
    using EvalError::EvalError;
};

}  // namespace basalt::tmpl
