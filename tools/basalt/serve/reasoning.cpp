#include "reasoning.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace basalt::serve {

namespace {

// Each family's markers, the generic <think>...</think> last (facts read from the families' templates and
// llama.cpp's common/chat parsers).
constexpr std::array<ReasoningMarkers, 8> kFamilies = {{
    // gpt-oss (harmony): the analysis channel up to <|end|>, then the next message (the final channel, whose header
    // is dropped, or a tool call on the commentary channel); a reply may also go to the final channel at once.
    {"<|channel|>analysis<|message|>", "<|end|>", "<|channel|>final<|message|>", "<|channel|>analysis<|message|>",
     "<|start|>assistant"},
    {"<|channel>thought", "<channel|>"},         // Gemma 4
    {"[THINK]", "[/THINK]"},                     // Magistral, Ministral 3 reasoning
    {"<|START_THINKING|>", "<|END_THINKING|>"},  // Command R7B, Cohere2 MoE
    {"<seed:think>", "</seed:think>"},           // Seed-OSS
    {"<mm:think>", "</mm:think>"},               // MiniMax M3
    {"<|inner_prefix|>", "<|inner_suffix|>"},    // Apertus
    {"<think>", "</think>"},                     // DeepSeek-R1, Qwen3, QwQ, GLM, Kimi, SmolLM3, LFM2, Nemotron...
}};

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

// Length of the longest proper suffix of text that is a prefix of marker (a marker perhaps cut by the chunk end).
size_t partial_marker(std::string_view text, std::string_view marker) {
    for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
        if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
    return 0;
}

// Drops leading whitespace from s; true when something else remains.
bool drop_leading_space(std::string& s) {
    const auto it = std::find_if(s.begin(), s.end(), [](char c) { return !is_space(c); });
    s.erase(s.begin(), it);
    return !s.empty();
}

}  // namespace

ReasoningMarkers reasoning_markers_for(const std::string& template_source) {
    for (const ReasoningMarkers& m : kFamilies)
        if (template_source.find(m.spelled != nullptr ? m.spelled : m.close) != std::string::npos) return m;
    return kFamilies.back();
}

bool prompt_opens_reasoning(const std::string& prompt, const ReasoningMarkers& markers) {
    size_t end = prompt.size();
    while (end > 0 && is_space(prompt[end - 1])) --end;
    const std::string_view open = markers.open;
    return end >= open.size() && std::string_view(prompt).substr(end - open.size(), open.size()) == open;
}

ReasoningSplitter::ReasoningSplitter(ReasoningMarkers markers, bool starts_open)
    : markers_(markers),
      state_(starts_open ? State::Reasoning : State::Start),
      skip_space_(starts_open),
      reasoned_(starts_open) {}

void ReasoningSplitter::feed(const std::string& text, std::string& reasoning, std::string& content) {
    held_ += text;
    const std::string_view open = markers_.open, close = markers_.close;
    const std::string_view answer = markers_.answer != nullptr ? markers_.answer : "";
    const std::string_view next = markers_.next != nullptr ? markers_.next : "";
    for (;;) {
        if (state_ == State::Start) {
            const size_t first = held_.find_first_not_of(" \n\t\r");
            if (first == std::string::npos) return;  // only whitespace so far: undecided
            const std::string_view rest = std::string_view(held_).substr(first);
            if (rest.substr(0, open.size()) == open) {
                held_.erase(0, first + open.size());
                if (reasoned_) reasoning += '\n';  // a second reasoning block (harmony): one line apart
                reasoned_ = true;
                state_ = State::Reasoning;
                skip_space_ = true;
                continue;
            }
            if (!answer.empty() && rest.substr(0, answer.size()) == answer) {  // the answer's header: dropped
                held_.erase(0, first + answer.size());
                state_ = State::Content;
                skip_space_ = true;
                continue;
            }
            if (!next.empty() && rest.substr(0, next.size()) == next) {  // the next message's start: dropped
                held_.erase(0, first + next.size());
                continue;
            }
            if (open.substr(0, rest.size()) == rest) return;                       // perhaps the opening marker, cut
            if (!next.empty() && next.substr(0, rest.size()) == rest) return;      // perhaps the next message's start
            if (!answer.empty() && answer.substr(0, rest.size()) == rest) return;  // perhaps the answer's header
            state_ = State::Content;  // no reasoning: the reply is all answer
            continue;
        }
        if (skip_space_) {
            if (!drop_leading_space(held_)) return;
            skip_space_ = false;
        }
        if (state_ == State::Content) {
            content += held_;
            held_.clear();
            return;
        }
        const size_t at = held_.find(close);
        if (at != std::string::npos) {
            size_t end = at;
            while (end > 0 && is_space(held_[end - 1])) --end;
            reasoning.append(held_, 0, end);
            held_.erase(0, at + close.size());
            state_ = next.empty() ? State::Content : State::Start;
            skip_space_ = true;
            continue;
        }
        // Hold a possible start of the closing marker and the whitespace before it.
        size_t keep_from = held_.size() - partial_marker(held_, close);
        while (keep_from > 0 && is_space(held_[keep_from - 1])) --keep_from;
        reasoning.append(held_, 0, keep_from);
        held_.erase(0, keep_from);
        return;
    }
}

void ReasoningSplitter::finish(std::string& reasoning, std::string& content) {
    if (state_ == State::Start) {
        // After a reasoning block (harmony's next message), whitespace alone is no answer.
        if (!reasoned_ || held_.find_first_not_of(" \n\t\r") != std::string::npos) content += held_;
    } else if (state_ == State::Reasoning) {
        size_t end = held_.size();
        while (end > 0 && is_space(held_[end - 1])) --end;
        reasoning.append(held_, 0, end);
    } else if (!skip_space_) {
        content += held_;
    }
    held_.clear();
}

}  // namespace basalt::serve
