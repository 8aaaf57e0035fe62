#include "server.hpp"

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>

namespace basalt::serve {

Server::Server(const ServerConfig& cfg, basalt_engine* engine, const basalt_model* model, ServedModel served)
    : cfg_(cfg),
      engine_(engine),
      model_(model),
      served_(std::move(served)),
      prep_pool_(static_cast<size_t>(std::max(1, cfg.http_threads))) {}

Server::~Server() {
    // Pending handlers (and the generations they hold) are destroyed with the io_context, before the members they
    // count into; no callback posts any more (run() closed posting).
    std::lock_guard<std::mutex> lock(post_mu_);
    posting_ = false;
}

int Server::run() {
    const tcp::endpoint ep{net::ip::make_address(cfg_.host), cfg_.port};
    listener_ = std::make_shared<HttpListener>(
        ioc_, ep, cfg_.limits,
        [this](const std::shared_ptr<HttpSession>& s, HttpRequest&& req) { handle(s, std::move(req)); },
        [this](int status) { metrics_.count_request("http", status); });
    listener_->start();
    const unsigned short port = listener_->port();
    if (!cfg_.port_file.empty()) {
        const std::string tmp = cfg_.port_file + ".tmp";
        std::ofstream(tmp) << port << '\n';
        std::rename(tmp.c_str(), cfg_.port_file.c_str());  // readers never see a half-written file
    }
    std::cerr << "basalt serve: serving '" << served_.id << "' on http://" << cfg_.host << ':' << port
              << " (chat template " << served_.chat.name() << ")" << std::endl;

    signals_ = std::make_unique<net::signal_set>(ioc_, SIGINT, SIGTERM);
    signals_->async_wait([this](const boost::system::error_code& ec, int) {
        if (!ec) begin_shutdown();
    });
    std::vector<std::thread> threads;
    for (int i = 1; i < cfg_.http_threads; ++i) threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : threads) t.join();
    {
        std::lock_guard<std::mutex> lock(post_mu_);
        posting_ = false;
    }
    cancel_all_jobs();
    std::cerr << "basalt serve: stopped" << std::endl;
    return 0;
}

void Server::begin_shutdown() {
    if (draining_.exchange(true)) return;
    std::cerr << "basalt serve: shutting down: " << inflight() << " generation(s) running or queued, grace "
              << cfg_.shutdown_grace.count() << " ms" << std::endl;
    listener_->stop();
    shutdown_start_ = std::chrono::steady_clock::now();
    shutdown_timer_ = std::make_unique<net::steady_timer>(ioc_);
    shutdown_tick();
}

void Server::shutdown_tick() {
    const auto waited = std::chrono::steady_clock::now() - shutdown_start_;
    if (inflight() == 0) {
        // Give the last responses a moment to be written, then stop every thread (idle keep-alive
        // connections would keep run() going).
        shutdown_timer_->expires_after(std::chrono::milliseconds(50));
        shutdown_timer_->async_wait([this](const boost::system::error_code&) { ioc_.stop(); });
        return;
    }
    if (!cancelled_ && waited >= cfg_.shutdown_grace) {
        std::cerr << "basalt serve: cancelling " << inflight() << " generation(s) still running" << std::endl;
        cancel_all_jobs();
        cancelled_ = true;
    }
    if (cancelled_ && waited >= cfg_.shutdown_grace + std::chrono::seconds(5)) {
        ioc_.stop();  // a cancelled request did not finish in time: stop anyway (handles are freed on exit)
        return;
    }
    shutdown_timer_->expires_after(std::chrono::milliseconds(20));
    shutdown_timer_->async_wait([this](const boost::system::error_code& ec) {
        if (!ec) shutdown_tick();
    });
}

}  // namespace basalt::serve
