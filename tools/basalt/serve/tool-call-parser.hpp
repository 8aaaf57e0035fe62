// A chat reply parsed into content and OpenAI tool calls by its template's convention (tool-conventions.hpp), fed
// in chunks as the reply streams: text before a call is content; a call is reported once its name is read (a
// declared tool) and its arguments object has begun, then its arguments as they arrive (the JSON text of the arguments
// object, as the model wrote it); a region that turns out not to be calls (not JSON, an unknown tool, a missing name)
// stays content. The XML-argument conventions report a call once its first parameter begins (or it closes), its
// arguments as the JSON object of its parameters so far (each parameter once its value is closed; a value is a string
// where the tool's schema says so, else its JSON, else the raw text as a string). The non-streamed reply is the same
// parser fed once, so both agree. docs/structured-output.md, "Tool calling".
#pragma once

#include <set>
#include <string>
#include <vector>

#include "tool-conventions.hpp"

namespace basalt::serve {

// What one feed adds to a tool call: on its first delta the id and name, then argument text.
struct ToolCallDelta {
    size_t index = 0;       // the call's position in the reply's tool_calls
    std::string id, name;   // set on the call's first delta only
    std::string arguments;  // the next piece of the arguments' JSON text
};

// A reply's whole call (the deltas of one index concatenated).
struct ToolCall {
    std::string id, name, arguments;
};

// Not thread-safe (one per choice, used on its exchange's strand).
class ToolCallParser {
  public:
    // tools: the declared function names (a call naming another stays content). id_prefix: call ids are
    // id_prefix + index. opened: the reply starts inside a call region whose opening marker was not written (the
    // tool_choice grammar omits a control-token marker). string_params: for the XML conventions' values.
    ToolCallParser(const ToolConvention& convention, std::set<std::string> tools, std::string id_prefix,
                   bool opened = false, StringParams string_params = {});
    // Adds a chunk of the reply; appends the content decided so far and the new call deltas.
    void feed(const std::string& text, std::string& content, std::vector<ToolCallDelta>& deltas);
    // The reply ended: appends what was held. A call cut short keeps the arguments read so far.
    void finish(std::string& content, std::vector<ToolCallDelta>& deltas);
    // The calls reported so far.
    const std::vector<ToolCall>& calls() const { return calls_; }

  private:
    struct Parsed;  // one call as the region's text shows it now
    void step(bool final, std::string& content, std::vector<ToolCallDelta>& deltas);
    // Parses region_ (the text from the call region's start); returns its state and the calls seen.
    int parse_region(bool final, std::vector<Parsed>& calls, size_t& consumed) const;
    void report(const std::vector<Parsed>& parsed, std::vector<ToolCallDelta>& deltas);
    // One call of an XML or harmony convention at held_[q] (its opening included); end: after it.
    int parse_tagged_call(size_t q, Parsed& call, size_t& end) const;
    // Whether held_[q] opens a call of an XML or harmony convention (Partial: the text ends inside the opening).
    int opens_tagged_call(size_t q) const;
    // A parameter's value as JSON text: a string where tool's schema makes key one, else the JSON the text spells.
    std::string typed_value(const std::string& tool, const std::string& key, const std::string& raw) const;
    // The texts that may open a call region.
    std::vector<std::string> openers() const;

    const ToolConvention& c_;
    std::set<std::string> tools_;
    std::string id_prefix_;
    StringParams string_params_;
    bool in_region_ = false;
    bool at_start_ = true;           // nothing but whitespace has been content yet
    std::string held_;               // text not yet decided (a marker's possible start, or the region so far)
    size_t region_first_ = 0;        // calls_ index of the region's first call
    std::vector<size_t> args_sent_;  // per call: argument bytes reported
    std::vector<ToolCall> calls_;
};

}  // namespace basalt::serve
