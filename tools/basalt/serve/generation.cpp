// A generation exchange: one HTTP request's choices submitted to the engine, their output streamed as Server-Sent
// Events or collected into one response, with usage counts, the request timeout and cancel on disconnect.
#include <algorithm>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "chat-tokens.hpp"
#include "reasoning.hpp"
#include "server.hpp"
#include "sse.hpp"
#include "tool-call-parser.hpp"

namespace basalt::serve {

// One engine request (one choice). Its callback runs on the engine's thread: it buffers the output under a mutex and
// posts the exchange's pump to the connection's strand.
class Job {
  public:
    Job(Server& server, cli::RequestSpec request_spec) : server_(server), spec(std::move(request_spec)) {}
    ~Job() {
        // basalt_request_free waits for a callback in progress; none starts after it (so notify's captures stay
        // valid while used). Unregistering a job never registered (a failed submit) is harmless.
        server_.unregister_job(this);
        basalt_request_free(request);
        server_.release_one();
    }
    Job(const Job&) = delete;
    Job& operator=(const Job&) = delete;

    static void on_output(basalt_request*, const int32_t* tokens, size_t n_tokens, const char* text, size_t text_len,
                          int32_t finish_reason, void* user_data) {
        auto* j = static_cast<Job*>(user_data);
        {
            std::lock_guard<std::mutex> lock(j->mu_);
            if (j->markers != nullptr)
                j->append_with_markers(tokens, n_tokens, text, text_len);
            else
                j->pending_.append(text, text_len);
            j->pending_tokens_ += n_tokens;
            if (finish_reason != BASALT_FINISH_NONE) j->pending_finish_ = finish_reason;
        }
        j->notify();
    }

    // Moves the buffered output out (text, tokens, finish reason or NONE).
    void take(std::string& out_text, size_t& out_tokens, int32_t& out_finish) {
        std::lock_guard<std::mutex> lock(mu_);
        out_text.swap(pending_);
        pending_.clear();
        out_tokens = pending_tokens_;
        pending_tokens_ = 0;
        out_finish = pending_finish_;
    }
    void cancel() const {
        if (request != nullptr) basalt_request_cancel(request);
    }

    Server& server_;
    cli::RequestSpec spec;
    basalt_request* request = nullptr;
    std::function<void()> notify;
    // Owned by the exchange's strand:
    std::string text;
    size_t tokens = 0;
    int32_t finish = BASALT_FINISH_NONE;
    bool done = false;
    size_t text_offset = 0;  // logprobs: bytes of the token pieces reported so far (completions' text_offset)
    std::optional<ReasoningSplitter> split;  // chat with reasoning split: text goes to reasoning and content
    std::string reasoning, content;          // chat: the reply's reasoning_content and content so far
    std::optional<ToolCallParser> tools;     // chat with tools: content parsed into tool calls
    // Tool-call markers that are control tokens (their text is empty in the output): put back for the parser.
    const std::vector<std::pair<int32_t, std::string>>* markers = nullptr;

  private:
    // Appends a step's text with the text of each marker token at its place (the bytes of the tokens before it;
    // text the stream still holds back, a partial character or a stop string's start, may land after it).
    void append_with_markers(const int32_t* ids, size_t n, const char* out, size_t len) {
        size_t offset = 0, placed = 0;
        for (size_t i = 0; i < n; ++i) {
            const auto it =
                std::find_if(markers->begin(), markers->end(), [&](const auto& m) { return m.first == ids[i]; });
            if (it == markers->end()) {
                char buf[64];
                size_t piece_len = 0;
                const basalt_status st =
                    basalt_token_to_piece(server_.model(), ids[i], 0, buf, sizeof(buf), &piece_len);
                if (st == BASALT_OK || st == BASALT_ERR_CAPACITY) offset += piece_len;
                continue;
            }
            const size_t at = std::min(offset, len);
            if (at > placed) pending_.append(out + placed, at - placed);
            placed = std::max(placed, at);
            pending_ += it->second;
        }
        if (len > placed) pending_.append(out + placed, len - placed);
    }

    std::mutex mu_;
    std::string pending_;
    size_t pending_tokens_ = 0;
    int32_t pending_finish_ = BASALT_FINISH_NONE;
};

void Server::register_job(Job* j) {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    jobs_.insert(j);
}

void Server::unregister_job(Job* j) {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    jobs_.erase(j);
}

void Server::cancel_all_jobs() {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    for (Job* j : jobs_) j->cancel();
}

namespace {

const char* openai_finish(int32_t reason) {
    switch (reason) {
        case BASALT_FINISH_STOP:
            return "stop";
        case BASALT_FINISH_LENGTH:
        case BASALT_FINISH_CONTEXT:
            return "length";
        default:
            return nullptr;
    }
}

// The text of one token as the vocabulary renders it in output (control tokens render empty).
std::string piece(const basalt_model* model, int32_t token) {
    char buf[256];
    size_t len = 0;
    if (basalt_token_to_piece(model, token, 0, buf, sizeof(buf), &len) == BASALT_OK) return std::string(buf, len);
    std::string big(len + 1, '\0');
    if (basalt_token_to_piece(model, token, 0, big.data(), big.size(), &len) != BASALT_OK) return {};
    big.resize(len);
    return big;
}

// A choice's finish_reason: "tool_calls" when a reply that stopped by itself holds tool calls.
const char* finish_name(const Job& j) {
    const char* fr = openai_finish(j.finish);
    if (j.finish == BASALT_FINISH_STOP && j.tools && !j.tools->calls().empty()) return "tool_calls";
    return fr;
}

// OpenAI's streamed tool_calls entries: the first of a call carries id, type and name, later ones argument text.
json tool_call_deltas(const std::vector<ToolCallDelta>& deltas) {
    json out = json::array();
    for (const ToolCallDelta& d : deltas) {
        json e = {{"index", d.index}};
        if (!d.id.empty()) {
            e["id"] = d.id;
            e["type"] = "function";
            e["function"] = {{"name", d.name}, {"arguments", d.arguments}};
        } else {
            e["function"] = {{"arguments", d.arguments}};
        }
        out.push_back(std::move(e));
    }
    return out;
}

json byte_list(const std::string& s) {
    json b = json::array();
    for (const char c : s) b.push_back(static_cast<unsigned char>(c));
    return b;
}

// The log-probabilities of a job's tokens [from, to) in the endpoint's format: chat's choices[].logprobs
// {"content": [{token, logprob, bytes, top_logprobs}]}, or the legacy completions object {tokens, token_logprobs,
// top_logprobs (dicts, the chosen token included), text_offset}. Token strings with invalid UTF-8 are replaced when
// dumped; "bytes" carries them exactly.
json logprobs_json(const basalt_model* model, Job& j, size_t from, size_t to, bool chat) {
    json content = json::array(), tokens = json::array(), token_lps = json::array(), tops = json::array(),
         offsets = json::array();
    int32_t ids[20];
    float lps[20];
    for (size_t i = from; i < to; ++i) {
        int32_t token = -1;
        float lp = 0.f;
        size_t n_top = 0;
        if (basalt_request_logprob(j.request, i, &token, &lp, ids, lps, 20, &n_top) != BASALT_OK) break;
        n_top = std::min<size_t>(n_top, 20);
        const std::string text = piece(model, token);
        if (chat) {
            json top = json::array();
            for (size_t k = 0; k < n_top; ++k) {
                const std::string t = piece(model, ids[k]);
                top.push_back(json{{"token", t}, {"logprob", lps[k]}, {"bytes", byte_list(t)}});
            }
            content.push_back(
                json{{"token", text}, {"logprob", lp}, {"bytes", byte_list(text)}, {"top_logprobs", std::move(top)}});
        } else {
            json top = json::object();
            for (size_t k = 0; k < n_top; ++k) top[piece(model, ids[k])] = lps[k];
            if (!top.contains(text)) top[text] = lp;
            tokens.push_back(text);
            token_lps.push_back(lp);
            tops.push_back(std::move(top));
            offsets.push_back(j.text_offset);
        }
        j.text_offset += text.size();
    }
    if (chat) return json{{"content", std::move(content)}};
    return json{{"tokens", std::move(tokens)},
                {"token_logprobs", std::move(token_lps)},
                {"top_logprobs", std::move(tops)},
                {"text_offset", std::move(offsets)}};
}

class Exchange : public std::enable_shared_from_this<Exchange> {
  public:
    Exchange(Server& server, std::shared_ptr<HttpSession> http, std::string endpoint, GenerationRequest&& g)
        : server_(server),
          http_(std::move(http)),
          endpoint_(std::move(endpoint)),
          g_(std::move(g)),
          timer_(http_->executor()),
          created_(static_cast<int64_t>(std::time(nullptr))) {
        id_ = std::string(g_.chat ? "chatcmpl-" : "cmpl-") + std::to_string(server_.next_id());
    }

    // Makes one job per choice (slots were reserved by the router: one per choice), then tokenizes and submits them
    // on the server's preparation threads, so that a long prompt never holds an HTTP thread. Runs on the strand.
    void start() {
        self_ = shared_from_this();
        std::weak_ptr<Exchange> weak = self_;
        const auto ex = http_->executor();
        for (size_t p = 0; p < g_.prompts.size(); ++p) {
            for (int k = 0; k < g_.n; ++k) {
                cli::RequestSpec spec = g_.prompts[p];
                if (spec.seed >= 0) spec.seed += k;  // n choices of one seeded request differ from each other
                auto job = std::make_unique<Job>(server_, std::move(spec));
                if (g_.chat && g_.split_reasoning) job->split.emplace(g_.reasoning, g_.reasoning_open);
                if (g_.chat && g_.tools.convention != nullptr) {
                    const std::string prefix =
                        "call_" + id_.substr(id_.find('-') + 1) + "_" + std::to_string(jobs_.size()) + "_";
                    job->tools.emplace(*g_.tools.convention, g_.tools.names, prefix, false, g_.tools.string_params);
                    if (!server_.served().tools.marker_tokens.empty())
                        job->markers = &server_.served().tools.marker_tokens;
                }
                Server* srv = &server_;
                job->notify = [srv, weak, ex] {
                    srv->post_to(ex, [weak] {
                        if (auto e = weak.lock()) e->pump();
                    });
                };
                jobs_.push_back(std::move(job));
            }
        }
        net::post(server_.prep_pool(), [self = self_] { self->prepare(self); });
    }

  private:
    // Tokenizes and submits every job (on a preparation thread: nothing on the strand reads jobs_ until begin()),
    // then continues on the strand with begin() or the error.
    void prepare(const std::shared_ptr<Exchange>& self) {
        const auto ex = http_->executor();
        auto refuse = [&](ApiError e) {
            server_.post_to(ex, [self, e] {
                self->jobs_.clear();  // cancels and frees what was submitted, gives the reserved slots back
                self->self_.reset();
                self->server_.send_error(self->http_, self->endpoint_, e);
            });
        };
        if (!g_.chat_pieces.empty()) {
            // Special tokens only from the template: message content is tokenized as text (chat-tokens.hpp).
            std::vector<int32_t> ids;
            try {
                ids = tokenize_chat(server_.model(), g_.chat_pieces);
            } catch (const std::exception& e) {
                return refuse(ApiError(400, e.what(), "messages"));
            }
            for (auto& j : jobs_) {
                j->spec.tokens = ids;
                j->spec.has_tokens = true;
                j->spec.flags &= ~static_cast<uint32_t>(BASALT_REQUEST_PARSE_SPECIAL);
            }
        }
        for (auto& job : jobs_) {
            Job& j = *job;
            const basalt_request_params rp = j.spec.raw(&Job::on_output, &j);
            if (basalt_engine_submit(server_.engine(), &rp, &j.request) != BASALT_OK) {
                std::string why = basalt_last_error();
                // A tool's parameters schema the call grammar cannot use: named as the request spells it.
                if (g_.tools.convention != nullptr) {
                    static constexpr std::string_view kArgs = "schema 'args-";
                    const size_t at = why.find(kArgs);
                    const size_t digits = at == std::string::npos ? at : at + kArgs.size();
                    size_t end = digits;
                    while (end != std::string::npos && end < why.size() && why[end] >= '0' && why[end] <= '9') ++end;
                    const size_t tool_end = end;  // an XML convention's rule names the parameter too: args-I-J
                    if (end != std::string::npos && end < why.size() && why[end] == '-') {
                        ++end;
                        while (end < why.size() && why[end] >= '0' && why[end] <= '9') ++end;
                    }
                    if (end != std::string::npos && tool_end > digits && end < why.size() && why[end] == '\'')
                        return refuse(ApiError(400,
                                               "tools[" + why.substr(digits, tool_end - digits) +
                                                   "].function.parameters: " + why.substr(end + 1),
                                               "tools"));
                }
                return refuse(ApiError(400, why, "prompt"));
            }
            // Registered only once `request` is written, so the shutdown path never reads it while it changes.
            server_.register_job(&j);
        }
        server_.post_to(ex, [self] { self->begin(); });
    }

    // Every job is submitted: watch the client and the clock, start the stream, drain output. On the strand.
    void begin() {
        started_ = true;
        if (http_->closed()) cancel(false);  // the client left while its prompt was prepared
        std::weak_ptr<Exchange> w = self_;
        http_->on_disconnect([w] {
            if (auto e = w.lock()) e->cancel(false);
        });
        timer_.expires_after(server_.config().request_timeout);
        timer_.async_wait([w](const boost::system::error_code& ec) {
            if (ec) return;
            if (auto e = w.lock()) e->cancel(true);
        });
        if (g_.stream) {
            http::response<http::empty_body> head{http::status::ok, 11};
            head.set(http::field::content_type, "text/event-stream");
            head.set(http::field::cache_control, "no-cache");
            head.set("X-Accel-Buffering", "no");
            http_->begin_stream(std::move(head));
            if (g_.chat) {
                for (size_t i = 0; i < jobs_.size(); ++i)
                    http_->stream_write(
                        sse_event(chunk(json::array({json{{"index", i},
                                                          {"delta", {{"role", "assistant"}, {"content", ""}}},
                                                          {"logprobs", nullptr},
                                                          {"finish_reason", nullptr}}}))));
            }
        }
        pump();
    }

    json chunk(json choices) const {
        return json{{"id", id_},
                    {"object", g_.chat ? "chat.completion.chunk" : "text_completion"},
                    {"created", created_},
                    {"model", server_.served().id},
                    {"choices", std::move(choices)}};
    }

    void cancel(bool timeout) {
        if (timeout)
            timed_out_ = true;
        else
            gone_ = true;
        for (auto& j : jobs_) j->cancel();
    }

    // Drains every job's new output on the strand; streams it; finishes when all are done.
    void pump() {
        if (!started_ || finished_) return;
        json choices = json::array();
        for (size_t i = 0; i < jobs_.size(); ++i) {
            Job& j = *jobs_[i];
            if (j.done) continue;
            std::string text;
            size_t n = 0;
            int32_t reason = BASALT_FINISH_NONE;
            j.take(text, n, reason);
            j.text += text;
            const size_t first_token = j.tokens;
            j.tokens += n;
            if (reason != BASALT_FINISH_NONE) {
                j.done = true;
                j.finish = reason;
            }
            // Chat: the new text split into reasoning and answer (all answer without a splitter).
            std::string reasoning, content;
            if (j.split) {
                j.split->feed(text, reasoning, content);
                if (j.done) j.split->finish(reasoning, content);
            } else {
                content = text;
            }
            std::vector<ToolCallDelta> deltas;
            if (j.tools) {  // content parsed into tool calls
                std::string plain;
                j.tools->feed(content, plain, deltas);
                if (j.done) j.tools->finish(plain, deltas);
                content = std::move(plain);
            }
            j.reasoning += reasoning;
            j.content += content;
            if (g_.stream && !http_->closed()) {
                const char* fr = j.done ? finish_name(j) : nullptr;
                if (n > 0 || !text.empty() || fr != nullptr) {  // one event per step with tokens, even textless
                    json c = {{"index", i}};
                    if (g_.chat) {
                        json delta = json::object();
                        if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
                        if (!content.empty()) delta["content"] = content;
                        if (!deltas.empty()) delta["tool_calls"] = tool_call_deltas(deltas);
                        c["delta"] = std::move(delta);
                    } else {
                        c["text"] = text;
                    }
                    c["logprobs"] = g_.logprobs >= 0 && n > 0
                                        ? logprobs_json(server_.model(), j, first_token, j.tokens, g_.chat)
                                        : json(nullptr);
                    c["finish_reason"] = fr == nullptr ? json(nullptr) : json(fr);
                    choices.push_back(std::move(c));
                }
            }
        }
        bool all_done = true;
        for (auto& j : jobs_) all_done = all_done && j->done;
        if (g_.stream && !http_->closed()) {
            // One choice per event, as OpenAI streams them; the event that ends the last choice carries the usage.
            for (size_t k = 0; k < choices.size(); ++k) {
                json c = chunk(json::array({std::move(choices[k])}));
                if (k + 1 == choices.size() && all_done && !stop_error()) c["usage"] = usage();
                http_->stream_write(sse_event(c));
            }
        }
        if (all_done) finish();
    }

    // True when the server cancelled a job that neither timed out nor lost its client: a shutdown past its grace.
    bool cut_by_shutdown() const {
        if (timed_out_ || gone_) return false;
        return std::any_of(jobs_.begin(), jobs_.end(),
                           [](const auto& j) { return j->finish == BASALT_FINISH_CANCELLED; });
    }

    // The error that ends an exchange early, if one does: timeout, shutdown, or a request's engine error.
    std::optional<ApiError> stop_error() const {
        if (timed_out_)
            return ApiError(504, "the request timed out (--request-timeout)", "", "timeout_error", "timeout");
        if (cut_by_shutdown())
            return ApiError(503,
                            "the server shut down before the generation finished (--shutdown-grace): the output is "
                            "incomplete",
                            "", "server_error", "server_shutdown");
        const std::string err = error_message();
        if (!err.empty()) return ApiError(500, err, "", "server_error");
        return std::nullopt;
    }

    std::string error_message() const {
        for (const auto& j : jobs_)
            if (j->finish == BASALT_FINISH_ERROR) return basalt_request_error(j->request);
        return {};
    }

    json usage() const {
        uint64_t prompt = 0, cached = 0, completion = 0;
        for (size_t i = 0; i < jobs_.size(); ++i) {
            basalt_request_stats st{};
            st.struct_size = sizeof(st);
            basalt_request_stats_get(jobs_[i]->request, &st);
            if (i % static_cast<size_t>(g_.n) == 0) {  // one prompt counted once for its n choices
                prompt += st.prompt_tokens;
                cached += st.cached_tokens;
            }
            completion += st.generated_tokens;
        }
        return json{{"prompt_tokens", prompt},
                    {"completion_tokens", completion},
                    {"total_tokens", prompt + completion},
                    {"prompt_tokens_details", {{"cached_tokens", cached}}}};
    }

    void finish() {
        finished_ = true;
        timer_.cancel();
        // Metrics per choice.
        for (const auto& j : jobs_) {
            basalt_request_stats st{};
            st.struct_size = sizeof(st);
            basalt_request_stats_get(j->request, &st);
            std::vector<double> itl;
            size_t n_itl = 0;
            basalt_request_itl(j->request, nullptr, 0, &n_itl);
            itl.resize(n_itl);
            if (n_itl > 0) basalt_request_itl(j->request, itl.data(), itl.size(), &n_itl);
            server_.metrics().count_generation(st.prompt_tokens, st.cached_tokens, st.generated_tokens, st.ttft_ms, itl,
                                               basalt_finish_reason_name(j->finish));
        }
        const std::optional<ApiError> stop = stop_error();
        auto keep = self_;  // this exchange lives to the end of finish()
        self_.reset();
        if (http_->overflowed())
            std::cerr << "basalt serve: " << id_ << ": the client did not read its stream (more than "
                      << server_.config().limits.stream_buffer_bytes
                      << " bytes queued, --max-stream-buffer): request cancelled" << std::endl;
        if (http_->closed() || gone_) {
            server_.metrics().count_request(endpoint_, 499);  // the client went away (or did not read)
            return;
        }
        if (g_.stream) {
            // An exchange cut short ends with an error event before [DONE], as vLLM and llama-server end theirs, so
            // that a client can tell a truncated stream from a finished one.
            if (stop) {
                http_->stream_write(sse_event(error_object(*stop)));
            } else if (g_.include_usage) {
                json c = chunk(json::array());
                c["usage"] = usage();
                http_->stream_write(sse_event(c));
            }
            http_->stream_write(sse_done());
            http_->end_stream();
            server_.metrics().count_request(endpoint_, stop ? stop->status : 200);
            return;
        }
        if (stop) {
            server_.send_error(http_, endpoint_, *stop);
            return;
        }
        json choices = json::array();
        for (size_t i = 0; i < jobs_.size(); ++i) {
            Job& j = *jobs_[i];
            json c = {{"index", i}};
            const bool calls = j.tools && !j.tools->calls().empty();
            if (g_.chat) {
                // With tool calls and no text, content is null (as OpenAI answers).
                c["message"] = {{"role", "assistant"},
                                {"content", calls && j.content.empty() ? json(nullptr) : json(j.content)}};
                if (!j.reasoning.empty()) c["message"]["reasoning_content"] = j.reasoning;
                if (calls) {
                    json list = json::array();
                    for (const ToolCall& t : j.tools->calls())
                        list.push_back(json{{"id", t.id},
                                            {"type", "function"},
                                            {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
                    c["message"]["tool_calls"] = std::move(list);
                }
            } else
                c["text"] = j.text;
            j.text_offset = 0;
            c["logprobs"] = g_.logprobs >= 0 ? logprobs_json(server_.model(), j, 0, j.tokens, g_.chat) : json(nullptr);
            const char* fr = finish_name(j);
            c["finish_reason"] = fr == nullptr ? json(nullptr) : json(fr);
            json figures = json::object();
            const char* name = nullptr;
            double value = 0;
            for (size_t k = 0; basalt_request_decoder_stat(j.request, k, &name, &value) == BASALT_OK; ++k)
                figures[name] = value;
            if (!figures.empty()) c["decoder_stats"] = figures;
            choices.push_back(std::move(c));
        }
        json body = {{"id", id_},
                     {"object", g_.chat ? "chat.completion" : "text_completion"},
                     {"created", created_},
                     {"model", server_.served().id},
                     {"choices", std::move(choices)},
                     {"usage", usage()}};
        server_.send_json(http_, endpoint_, 200, body);
    }

    Server& server_;
    std::shared_ptr<HttpSession> http_;
    std::string endpoint_;
    GenerationRequest g_;
    net::steady_timer timer_;
    int64_t created_;
    std::string id_;
    std::vector<std::unique_ptr<Job>> jobs_;
    std::shared_ptr<Exchange> self_;  // alive until finished
    bool started_ = false, finished_ = false, timed_out_ = false, gone_ = false;
};

}  // namespace

void start_generation(Server& server, const std::shared_ptr<HttpSession>& s, const std::string& endpoint,
                      GenerationRequest&& g) {
    std::make_shared<Exchange>(server, s, endpoint, std::move(g))->start();
}

}  // namespace basalt::serve
