// One engine request as the CLI front ends build it (basalt batch, basalt serve, basalt chat): basalt.hpp's
// RequestParams, and the JSON reader the request formats share.
#pragma once

#include <basalt/basalt.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace basalt::cli {

// Owned storage behind a basalt_request_params (basalt.hpp).
using RequestSpec = cpp::RequestParams;

// Reads a JSON value that is a string or an array of strings into out (appended). Returns "" or the reason,
// "'NAME' must be WHAT" naming the field. Pure function.
std::string read_string_or_list(const nlohmann::ordered_json& v, const char* name, const char* what,
                                std::vector<std::string>& out);

// A decoder spec with the --draft-adaptive setting applied: a 'speculative' spec that does not set `adaptive`
// itself gets adaptive=1 (on) or adaptive=0 (off); other specs, and any spec when `setting` is empty, come back
// as given. Pure function.
std::string with_draft_adaptive(const std::string& spec, const std::string& setting);

}  // namespace basalt::cli
