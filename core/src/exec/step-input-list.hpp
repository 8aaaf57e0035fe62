// The step inputs a session composes, in IO-buffer order (step-input-list.cpp holds the list).
#pragma once

#include <memory>
#include <vector>

#include "exec/step-input.hpp"

namespace basalt {

// A fresh instance of every step input and output, in order. The caller owns them.
std::vector<std::unique_ptr<StepInput>> make_step_inputs();

}  // namespace basalt
