// Basalt blocks: the error type thrown by the block (de)quantizers (a status plus a message).
#pragma once

#include <basalt/common.h>

#include <stdexcept>
#include <string>

namespace basalt::blocks {

// Thrown for unsupported types and malformed lengths; status is BASALT_ERR_UNSUPPORTED / INVALID_ARGUMENT.
class error : public std::runtime_error {
  public:
    error(basalt_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
    basalt_status status() const noexcept { return status_; }

  private:
    basalt_status status_;
};

}  // namespace basalt::blocks
