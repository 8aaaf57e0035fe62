// `basalt serve`: the server object. It owns the HTTP listener and its io_context threads, routes requests
// (routes.cpp), runs generations on the engine (generation.cpp: the engine runs on its own thread, asio threads
// submit and receive output through request callbacks posted to each connection's strand), counts metrics and
// shuts down cleanly on SIGTERM/SIGINT. docs/server.md.
#pragma once

#include <basalt/basalt.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "http-session.hpp"
#include "metrics.hpp"
#include "openai-request.hpp"

namespace basalt::serve {

struct ServerConfig {
    std::string host = "127.0.0.1";
    unsigned short port = 8080;  // 0: any free port (see port_file)
    std::string port_file;       // written with the bound port once listening ("" : none)
    int http_threads = 2;
    std::string api_key;     // "" : no authentication
    size_t max_queue = 256;  // generations waiting beyond the running ones before 429
    size_t n_parallel = 8;   // the engine's running requests (the queue bound adds to it)
    std::chrono::milliseconds request_timeout{600000};
    std::chrono::milliseconds shutdown_grace{10000};  // running requests may finish for this long after SIGTERM
    HttpLimits limits;
};

class Job;

// The running server. Construct, then run() blocks until shutdown. Thread-safe where noted.
class Server {
  public:
    // engine (own thread) and model are borrowed and must outlive the server.
    Server(const ServerConfig& cfg, basalt_engine* engine, const basalt_model* model, ServedModel served);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;
    // Listens, serves until SIGTERM/SIGINT, drains, returns 0 (or throws naming a bind failure).
    int run();

    // --- used by routes and generations (thread-safe) ---
    basalt_engine* engine() const { return engine_; }
    const basalt_model* model() const { return model_; }
    const ServedModel& served() const { return served_; }
    const ServerConfig& config() const { return cfg_; }
    Metrics& metrics() { return metrics_; }
    // Reserves n generation slots against the bound; false when the queue is full (answer 429).
    bool try_reserve(size_t n);
    // Gives back one slot (a generation finished and its handle was freed).
    void release_one() { inflight_.fetch_sub(1); }
    int64_t inflight() const { return inflight_.load(); }
    bool draining() const { return draining_.load(); }
    // Jobs register so that shutdown can cancel them.
    void register_job(Job* j);
    void unregister_job(Job* j);
    // Posts f to executor unless the server has stopped its io threads (then output stays with its job). Called
    // from the engine's thread by request callbacks.
    template <class F>
    void post_to(const net::any_io_executor& ex, F&& f) {
        std::lock_guard<std::mutex> lock(post_mu_);
        if (posting_) net::post(ex, std::forward<F>(f));
    }
    // The threads that tokenize and submit prompts (off the HTTP threads, so a long prompt never delays /health).
    net::thread_pool& prep_pool() { return prep_pool_; }
    // A fresh response id number.
    uint64_t next_id() { return ids_.fetch_add(1); }
    // Answers a JSON body with status (and counts it for endpoint).
    void send_json(const std::shared_ptr<HttpSession>& s, const std::string& endpoint, int status, const json& body,
                   const std::vector<std::pair<std::string, std::string>>& headers = {});
    // Answers an ApiError as its error object.
    void send_error(const std::shared_ptr<HttpSession>& s, const std::string& endpoint, const ApiError& e);

  private:
    void handle(const std::shared_ptr<HttpSession>& s, HttpRequest&& req);  // routes.cpp
    void begin_shutdown();
    void shutdown_tick();
    void cancel_all_jobs();

    ServerConfig cfg_;
    basalt_engine* engine_;
    const basalt_model* model_;
    ServedModel served_;
    Metrics metrics_;
    std::atomic<int64_t> inflight_{0};
    std::atomic<bool> draining_{false};
    std::atomic<uint64_t> ids_{1};
    std::mutex jobs_mu_;
    std::set<Job*> jobs_;
    std::chrono::steady_clock::time_point shutdown_start_{};
    bool cancelled_ = false;
    std::mutex post_mu_;
    bool posting_ = true;
    // Declared last: destroyed first (pending handlers hold generations that count into the members above).
    net::io_context ioc_;
    std::shared_ptr<HttpListener> listener_;
    std::unique_ptr<net::signal_set> signals_;
    std::unique_ptr<net::steady_timer> shutdown_timer_;
    // After ioc_: destroyed (stopped and joined) before it, so no preparation posts to a destroyed io_context.
    net::thread_pool prep_pool_;
};

// Starts a generation exchange for a parsed request on session s (generation.cpp); it answers by itself.
void start_generation(Server& server, const std::shared_ptr<HttpSession>& s, const std::string& endpoint,
                      GenerationRequest&& g);

// Answers POST /v1/embeddings with body on session s (embeddings.cpp): inputs submitted as embedding requests.
void start_embeddings(Server& server, const std::shared_ptr<HttpSession>& s, const std::string& endpoint,
                      const std::string& body);
// Answers POST /v1/rerank with body on session s (rerank.cpp): query-document pairs scored by the rank head.
void start_rerank(Server& server, const std::shared_ptr<HttpSession>& s, const std::string& endpoint,
                  const std::string& body);

}  // namespace basalt::serve
