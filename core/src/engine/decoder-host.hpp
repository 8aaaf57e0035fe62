// The services table a decoder instance receives (basalt_decoder_host): the engine's view of one request's
// sequences, sampler chains and output, with every entry point catching and reporting through the host.
#pragma once

#include "engine/request.hpp"

namespace basalt::engine {

// Fills r.host for r (ctx = &r); valid while r lives.
void make_decoder_host(Request& r);

}  // namespace basalt::engine
