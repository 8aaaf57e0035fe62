// Basalt blocks: the error type thrown by the block (de)quantizers (a status plus a message).
#pragma once

#include <basalt/common.h>
#include <basalt/blocks/dtype.hpp>

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

// Checks a row request of a (de)quantizer (`what`): the type must be `supported` and n a whole number of its
// blocks. Returns the block size; throws error naming the operation, the type and the count otherwise.
inline int64_t check_row(const char* what, bool supported, basalt_dtype type, int64_t n) {
    if (!supported) {
        throw error(BASALT_ERR_UNSUPPORTED, std::string(what) + ": weight type " + dtype_name(type) + " (" +
                                                std::to_string(type) + ") is not supported");
    }
    const int64_t bs = dtype_traits(type)->block_size;
    if (n < 0 || n % bs != 0) {
        throw error(BASALT_ERR_INVALID_ARGUMENT, std::string(what) + ": " + std::to_string(n) + " elements of " +
                                                     dtype_name(type) + " are not a whole number of " +
                                                     std::to_string(bs) + "-element blocks");
    }
    return bs;
}

}  // namespace basalt::blocks
