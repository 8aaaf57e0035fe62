// POST /v1/embeddings (OpenAI's shape; docs/embeddings.md): `input` a string, an array of strings, an array of token
// ids or an array of such arrays; `encoding_format` float or base64; `dimensions`; the answer's usage counts the
// input tokens. Every input is one engine embedding request, submitted together so the engine batches them; each is
// checked at submit, and the first refused one answers 400 naming its index and why (a model that cannot embed, an
// input longer than the context).
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>

#include "embed-exchange.hpp"
#include "json-limits.hpp"

namespace basalt::serve {
namespace {

std::vector<EmbedInput> parse_inputs(const json& in, uint32_t n_vocab) {
    auto ids = [&](const json& a, const std::string& where) {
        EmbedInput e;
        e.is_tokens = true;
        for (const json& t : a) {
            if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= static_cast<int64_t>(n_vocab))
                throw ApiError(400,
                               where + " holds a token that is not an id of the vocabulary (0.." +
                                   std::to_string(n_vocab - 1) + ")",
                               "input");
            e.tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
        }
        return e;
    };
    std::vector<EmbedInput> out;
    if (in.is_string()) {
        out.push_back(EmbedInput{in.get<std::string>(), {}, false});
    } else if (in.is_array() && !in.empty() && in[0].is_number_integer()) {
        out.push_back(ids(in, "input"));
    } else if (in.is_array() && !in.empty()) {
        for (size_t i = 0; i < in.size(); ++i) {
            const std::string where = "input[" + std::to_string(i) + "]";
            if (in[i].is_string()) {
                out.push_back(EmbedInput{in[i].get<std::string>(), {}, false});
            } else if (in[i].is_array()) {
                out.push_back(ids(in[i], where));
            } else {
                throw ApiError(400, where + " must be a string or an array of token ids", "input");
            }
        }
    } else {
        throw ApiError(400, "'input' must be a string, an array of strings, or token ids (an array or arrays)",
                       "input");
    }
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i].is_tokens ? out[i].tokens.empty() : out[i].text.empty())
            throw ApiError(400, "input " + std::to_string(i) + " is empty", "input");
    }
    return out;
}

std::string base64(const std::vector<float>& v) {
    static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string bytes(v.size() * sizeof(float), '\0');
    if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian float32, as OpenAI sends
    std::string out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                           (i + 1 < bytes.size() ? static_cast<uint8_t>(bytes[i + 1]) << 8 : 0) |
                           (i + 2 < bytes.size() ? static_cast<uint8_t>(bytes[i + 2]) : 0);
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
        out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
    }
    return out;
}

// One exchange: its requests, and the answer once the last has finished (on the session's strand).
class EmbedExchange : public std::enable_shared_from_this<EmbedExchange> {
  public:
    EmbedExchange(Server& server, std::shared_ptr<HttpSession> http, std::string endpoint, size_t reserved,
                  EmbedRespond respond)
        : server_(server),
          http_(std::move(http)),
          endpoint_(std::move(endpoint)),
          reserved_(reserved),
          respond_(std::move(respond)) {}
    ~EmbedExchange() {
        for (basalt_request* r : requests_) basalt_request_free(r);
        for (size_t i = 0; i < reserved_; ++i) server_.release_one();
    }
    EmbedExchange(const EmbedExchange&) = delete;
    EmbedExchange& operator=(const EmbedExchange&) = delete;

    void start(const std::vector<EmbedInput>& inputs, int32_t pooling, uint32_t dimensions) {
        self_ = shared_from_this();
        pending_ = inputs.size();
        for (size_t i = 0; i < inputs.size(); ++i) {
            basalt_request_params p{};
            p.struct_size = sizeof(p);
            p.flags = BASALT_REQUEST_EMBED;
            if (inputs[i].is_tokens) {
                p.tokens = inputs[i].tokens.data();
                p.n_tokens = inputs[i].tokens.size();
            } else {
                p.prompt = inputs[i].text.data();
                p.prompt_len = inputs[i].text.size();
            }
            p.max_tokens = -1;
            p.seed = -1;
            p.pooling = pooling;
            p.dimensions = dimensions;
            p.callback = &EmbedExchange::on_output;
            p.user_data = this;
            basalt_request* r = nullptr;
            if (basalt_engine_submit(server_.engine(), &p, &r) != BASALT_OK) {
                const std::string why = basalt_last_error();
                for (basalt_request* q : requests_) basalt_request_cancel(q);
                refused_ = ApiError(400, "input " + std::to_string(i) + ": " + why, "input");
                // The requests already submitted finish (cancelled) through their callbacks: the last one answers,
                // or this when they all finished already (or there were none).
                const size_t never = inputs.size() - i;
                if (pending_.fetch_sub(never) == never) answer();
                return;
            }
            requests_.push_back(r);
        }
    }

  private:
    static void on_output(basalt_request*, const int32_t*, size_t, const char*, size_t, int32_t finish, void* user) {
        auto* x = static_cast<EmbedExchange*>(user);
        if (finish == BASALT_FINISH_NONE) return;
        if (x->pending_.fetch_sub(1) != 1) return;
        // The last one: answer on the connection's strand (self_ keeps the exchange alive until then).
        x->server_.post_to(x->http_->executor(), [self = x->self_] { self->answer(); });
    }

    void answer() {
        const std::shared_ptr<EmbedExchange> keep = std::move(self_);
        if (refused_) return server_.send_error(http_, endpoint_, *refused_);
        std::vector<std::vector<float>> results;
        uint64_t tokens = 0;
        for (size_t i = 0; i < requests_.size(); ++i) {
            basalt_request* r = requests_[i];
            // The last callback has run; the finish is published as it returns (a moment, never a step).
            while (basalt_request_finish_reason(r) == BASALT_FINISH_NONE) basalt_request_wait(r, 100);
            if (basalt_request_finish_reason(r) != BASALT_FINISH_STOP) {
                return server_.send_error(
                    http_, endpoint_,
                    ApiError(500, "input " + std::to_string(i) + ": " + basalt_request_error(r), "", "server_error"));
            }
            size_t n = 0;
            basalt_request_embedding(r, nullptr, 0, &n);
            std::vector<float> v(n);
            basalt_request_embedding(r, v.data(), v.size(), &n);
            basalt_request_stats st{};
            st.struct_size = sizeof(st);
            basalt_request_stats_get(r, &st);
            tokens += st.prompt_tokens;
            results.push_back(std::move(v));
        }
        server_.send_json(http_, endpoint_, 200, respond_(results, tokens));
    }

    Server& server_;
    std::shared_ptr<HttpSession> http_;
    std::string endpoint_;
    size_t reserved_;
    EmbedRespond respond_;
    std::shared_ptr<EmbedExchange> self_;
    std::vector<basalt_request*> requests_;
    std::atomic<size_t> pending_{0};
    std::optional<ApiError> refused_;
};

}  // namespace

void submit_embeddings(Server& server, const std::shared_ptr<HttpSession>& s, const std::string& endpoint,
                       std::vector<EmbedInput> inputs, int32_t pooling, uint32_t dimensions, EmbedRespond respond) {
    if (!server.try_reserve(inputs.size())) {
        return server.send_json(
            s, endpoint, 429,
            error_object(ApiError(429, "the server is busy; retry later", "", "rate_limit_error", "queue_full")),
            {{"Retry-After", "1"}});
    }
    std::make_shared<EmbedExchange>(server, s, endpoint, inputs.size(), std::move(respond))
        ->start(inputs, pooling, dimensions);
}

void start_embeddings(Server& server, const std::shared_ptr<HttpSession>& s, const std::string& endpoint,
                      const std::string& body_text) {
    std::vector<EmbedInput> inputs;
    uint32_t dimensions = 0;
    bool as_base64 = false;
    try {
        const json body = parse_body(body_text);
        for (const auto& [key, value] : body.items()) {
            if (key != "model" && key != "input" && key != "encoding_format" && key != "dimensions" && key != "user")
                throw ApiError(400,
                               "unknown field '" + cli::excerpt(key) +
                                   "' (/v1/embeddings takes model, input, encoding_format, dimensions, user)",
                               key);
        }
        if (body.contains("model") && (!body["model"].is_string() || body["model"] != server.served().id))
            throw ApiError(404, "this server serves '" + server.served().id + "'", "model", "invalid_request_error",
                           "model_not_found");
        if (!body.contains("input")) throw ApiError(400, "'input' is required", "input");
        inputs = parse_inputs(body["input"], server.served().n_vocab);
        if (body.contains("encoding_format")) {
            const json& f = body["encoding_format"];
            if (f != "float" && f != "base64")
                throw ApiError(400, "'encoding_format' must be \"float\" or \"base64\"", "encoding_format");
            as_base64 = f == "base64";
        }
        if (body.contains("dimensions")) {
            const json& d = body["dimensions"];
            if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > 1 << 20)
                throw ApiError(400, "'dimensions' must be a positive integer", "dimensions");
            dimensions = static_cast<uint32_t>(d.get<int64_t>());
        }
    } catch (const ApiError& e) {
        return server.send_error(s, endpoint, e);
    }
    const std::string id = server.served().id;
    submit_embeddings(server, s, endpoint, std::move(inputs), BASALT_POOLING_MODEL, dimensions,
                      [as_base64, id](std::vector<std::vector<float>>& results, uint64_t tokens) {
                          json data = json::array();
                          for (size_t i = 0; i < results.size(); ++i) {
                              json e = {{"object", "embedding"}, {"index", i}};
                              if (as_base64) {
                                  e["embedding"] = base64(results[i]);
                              } else {
                                  e["embedding"] = std::move(results[i]);
                              }
                              data.push_back(std::move(e));
                          }
                          return json{{"object", "list"},
                                      {"data", std::move(data)},
                                      {"model", id},
                                      {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
                      });
}

}  // namespace basalt::serve
