// Routing of `basalt serve`: authentication, the endpoints, the request-body checks and the 429 bound.
#include <ctime>

#include "server.hpp"
#include "template-routes.hpp"

namespace basalt::serve {

namespace {

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

// Compares without stopping at the first difference (the key's length still shows).
bool same_secret(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char d = 0;
    for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
    return d == 0;
}

}  // namespace

void Server::handle(const std::shared_ptr<HttpSession>& s, HttpRequest&& req) {
    std::string target(req.target());
    if (auto q = target.find('?'); q != std::string::npos) target.resize(q);
    const bool is_v1 = starts_with(target, "/v1/");
    const std::string endpoint = target == "/health" || target == "/metrics" || target == "/v1/models" ||
                                         target == "/v1/completions" || target == "/v1/chat/completions" ||
                                         target == "/v1/embeddings" || target == "/v1/rerank"
                                     ? target
                                 : starts_with(target, "/v1/models/") ? "/v1/models/{id}"
                                                                      : "other";
    const auto method = req.method();

    if (target == "/health") {
        if (method != http::verb::get) return send_error(s, endpoint, ApiError(405, "/health takes GET"));
        if (draining()) return send_json(s, endpoint, 503, json{{"status", "draining"}});
        return send_json(s, endpoint, 200, json{{"status", "ok"}});
    }
    if (target == "/metrics") {
        if (method != http::verb::get) return send_error(s, endpoint, ApiError(405, "/metrics takes GET"));
        HttpResponse res{http::status::ok, 11};
        res.set(http::field::content_type, "text/plain; version=0.0.4");
        metrics_.count_request(endpoint, 200);
        res.body() = metrics_.render(engine_, inflight());
        return s->respond(std::move(res));
    }
    if ((is_v1 || is_template_route(target)) && !cfg_.api_key.empty()) {
        const auto auth_field = req[http::field::authorization];
        const std::string_view auth(auth_field.data(), auth_field.size());
        if (!starts_with(auth, "Bearer ") || !same_secret(auth.substr(7), cfg_.api_key))
            return send_error(s, endpoint,
                              ApiError(401, "a valid API key is required: send 'Authorization: Bearer KEY'", "",
                                       "invalid_request_error", "invalid_api_key"));
    }
    if (draining()) return send_error(s, endpoint, ApiError(503, "the server is shutting down", "", "server_error"));

    if (target == "/v1/models" || starts_with(target, "/v1/models/")) {
        if (method != http::verb::get) return send_error(s, endpoint, ApiError(405, "/v1/models takes GET"));
        const json m = {{"id", served_.id}, {"object", "model"}, {"created", 0}, {"owned_by", "basalt"}};
        if (target == "/v1/models") return send_json(s, endpoint, 200, json{{"object", "list"}, {"data", {m}}});
        if (target.substr(11) != served_.id)
            return send_error(s, endpoint,
                              ApiError(404, "the model '" + target.substr(11) + "' does not exist", "model",
                                       "invalid_request_error", "model_not_found"));
        return send_json(s, endpoint, 200, m);
    }
    if (is_template_route(target)) {  // llama-server's /apply-template, /tokenize, /detokenize (template-routes.hpp)
        if (method != http::verb::post)
            return send_json(s, target, 405, error_object(ApiError(405, target + " takes POST")), {{"Allow", "POST"}});
        try {
            return send_json(s, target, 200, template_route(target, parse_body(req.body()), served_, model_));
        } catch (const ApiError& e) {
            return send_error(s, target, e);
        }
    }
    if (target != "/v1/completions" && target != "/v1/chat/completions" && target != "/v1/embeddings" &&
        target != "/v1/rerank")
        return send_error(s, endpoint, ApiError(404, "no endpoint '" + target + "' (docs/server.md lists them)"));
    if (method != http::verb::post) return send_error(s, endpoint, ApiError(405, target + " takes POST"));
    const auto ctype_field = req[http::field::content_type];
    const std::string_view ctype(ctype_field.data(), ctype_field.size());
    // curl -d sends application/x-www-form-urlencoded: accepted like a missing type (the body must still be JSON).
    if (!ctype.empty() && !starts_with(ctype, "application/json") &&
        !starts_with(ctype, "application/x-www-form-urlencoded"))
        return send_error(s, endpoint,
                          ApiError(415, "the body must be application/json, not '" + std::string(ctype) + "'"));

    if (target == "/v1/embeddings") return start_embeddings(*this, s, endpoint, req.body());
    if (target == "/v1/rerank") return start_rerank(*this, s, endpoint, req.body());
    GenerationRequest g;
    try {
        const json body = parse_body(req.body());
        g = target == "/v1/completions" ? parse_completion(body, served_) : parse_chat(body, served_);
    } catch (const ApiError& e) {
        return send_error(s, endpoint, e);
    }
    const size_t choices = g.prompts.size() * static_cast<size_t>(g.n);
    if (!try_reserve(choices)) {
        return send_json(s, endpoint, 429,
                         error_object(ApiError(429,
                                               "the server is busy: " + std::to_string(inflight()) +
                                                   " generations are running or queued (--max-queue " +
                                                   std::to_string(cfg_.max_queue) + "); retry later",
                                               "", "rate_limit_error", "queue_full")),
                         {{"Retry-After", "1"}});
    }
    start_generation(*this, s, endpoint, std::move(g));
}

bool Server::try_reserve(size_t n) {
    const int64_t bound = static_cast<int64_t>(cfg_.max_queue + cfg_.n_parallel);
    int64_t cur = inflight_.load();
    for (;;) {
        if (cur + static_cast<int64_t>(n) > bound) return false;
        if (inflight_.compare_exchange_weak(cur, cur + static_cast<int64_t>(n))) return true;
    }
}

void Server::send_json(const std::shared_ptr<HttpSession>& s, const std::string& endpoint, int status, const json& body,
                       const std::vector<std::pair<std::string, std::string>>& headers) {
    HttpResponse res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : headers) res.set(k, v);
    res.body() = body.dump(-1, ' ', false, json::error_handler_t::replace);
    metrics_.count_request(endpoint, status);
    s->respond(std::move(res));
}

void Server::send_error(const std::shared_ptr<HttpSession>& s, const std::string& endpoint, const ApiError& e) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (e.status == 405)
        headers.emplace_back("Allow",
                             endpoint == "/v1/completions" || endpoint == "/v1/chat/completions" ? "POST" : "GET");
    send_json(s, endpoint, e.status, error_object(e), headers);
}

}  // namespace basalt::serve
