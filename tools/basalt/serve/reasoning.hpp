// A chat reply's reasoning split from its answer, as llama-server (--reasoning-format deepseek) and vLLM's reasoning
// parsers return it: the text between the template family's reasoning markers (<think>...</think>, [THINK]...
// [/THINK], ...) at the start of the reply becomes reasoning_content, the rest content. gpt-oss's harmony format is
// one such family: its analysis channel (<|channel|>analysis<|message|>...) is the reasoning, closed by <|end|>; the
// next message's <|start|>assistant and a final channel's header are dropped (a commentary message, a tool call,
// stays content for the tool-call parser). Streamed output is split chunk by chunk: text that may be the start of a
// marker is held until the next chunk decides it. docs/server.md, "Reasoning".
#pragma once

#include <string>

namespace basalt::serve {

// The markers that open and close a template family's reasoning. Static strings.
struct ReasoningMarkers {
    const char* open = "<think>";
    const char* close = "</think>";
    // A reply without reasoning may start with this header of its answer (harmony: <|channel|>final<|message|>),
    // which is dropped; nullptr: none.
    const char* answer = nullptr;
    // What the family's templates spell (reasoning_markers_for looks for it); nullptr: the closing marker.
    const char* spelled = nullptr;
    // After the closing marker the next message starts with this (harmony: <|start|>assistant), which is dropped,
    // and the reply continues as at its start (another reasoning block, or the answer's header); nullptr: the rest
    // is the answer.
    const char* next = nullptr;
};

// The markers of a chat template's family, recognised from its Jinja source (the first family whose templates'
// text (`spelled`, else the closing marker) the source holds; <think>...</think> otherwise, and for the native
// families: source ""). Pure function.
ReasoningMarkers reasoning_markers_for(const std::string& template_source);

// True when a rendered prompt ends inside an open reasoning block (the template's generation prompt opened it, as
// DeepSeek-R1's and QwQ's do): the reply then starts in its reasoning, without the opening marker. Pure function.
bool prompt_opens_reasoning(const std::string& prompt, const ReasoningMarkers& markers);

// Splits one reply, fed in chunks. Not thread-safe (one per choice, used on its exchange's strand).
class ReasoningSplitter {
  public:
    // starts_open: the prompt opened the reasoning block (prompt_opens_reasoning).
    ReasoningSplitter(ReasoningMarkers markers, bool starts_open);
    // Adds a chunk of the reply; appends to reasoning and content what is decided so far. The reasoning is
    // recognised only at the start of the reply (after whitespace); whitespace right after either marker and
    // right before the closing one is dropped; a marker later in the answer is content.
    void feed(const std::string& text, std::string& reasoning, std::string& content);
    // The reply ended: appends what was held (an unclosed reasoning is reasoning, trailing whitespace dropped).
    void finish(std::string& reasoning, std::string& content);

  private:
    enum class State { Start, Reasoning, Content };
    ReasoningMarkers markers_;
    State state_;
    bool skip_space_;  // drop whitespace until the next other character (after a marker)
    bool reasoned_;    // a reasoning block was opened
    std::string held_;
};

}  // namespace basalt::serve
