// The structured-output options the generating commands share (run, chat, batch): --grammar FILE (GBNF),
// --json-schema FILE, --regex RE, --json (any JSON object); docs/structured-output.md.
#pragma once

#include <boost/program_options.hpp>

#include "request-spec.hpp"

namespace basalt::cli {

// Adds --grammar, --json-schema, --regex and --json-object to d.
void add_grammar_options(boost::program_options::options_description& d);

// Sets rq.grammar_kind and rq.grammar from the options (the files read now). Throws UsageError for more than one of
// them or a file that cannot be read; the grammar itself is checked by the engine at submit.
void apply_grammar_options(const boost::program_options::variables_map& vm, RequestSpec& rq);

}  // namespace basalt::cli
