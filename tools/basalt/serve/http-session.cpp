#include "http-session.hpp"

#include <sstream>

namespace basalt::serve {

namespace {

std::string head_bytes(const http::response_header<>& h) {
    std::string out = "HTTP/1.1 " + std::to_string(h.result_int()) + " " + std::string(h.reason()) + "\r\n";
    for (const auto& f : h) {
        out += std::string(f.name_string());
        out += ": ";
        out += std::string(f.value());
        out += "\r\n";
    }
    out += "\r\n";
    return out;
}

std::string chunk(const std::string& data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + data + "\r\n";
}

}  // namespace

HttpSession::HttpSession(tcp::socket&& socket, const HttpLimits& limits, HttpHandler handler,
                         HttpStatusHook status_hook)
    : strand_(socket.get_executor()),
      stream_(std::move(socket)),
      limits_(limits),
      handler_(std::move(handler)),
      status_hook_(std::move(status_hook)),
      idle_timer_(strand_) {}

void HttpSession::start() {
    net::dispatch(strand_, [self = shared_from_this()] { self->read_request(); });
}

void HttpSession::read_request() {
    if (closed_) return;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits_.header_bytes));
    parser_->body_limit(limits_.body_bytes);
    // One deadline for the whole request: a slow or partial request cannot hold the connection longer.
    stream_.expires_after(limits_.read_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            net::bind_executor(strand_, [self = shared_from_this()](beast::error_code ec, size_t) {
                                self->on_header(ec);
                            }));
}

void HttpSession::on_header(beast::error_code ec) {
    if (ec == http::error::header_limit) return fail_http(431, "the request headers are larger than the limit");
    if (ec == http::error::body_limit) return fail_http(413, "the request body is larger than the limit");
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset) {
        return close();  // a request not complete within --read-timeout: the stream closed the socket
    }
    if (ec) {
        if (ec.category() == beast::error_code(http::error::bad_method).category())
            return fail_http(400, "malformed HTTP request: " + ec.message());
        return close();
    }
    // Answer "Expect: 100-continue" so clients that wait for it send the body at once.
    const auto& req = parser_->get();
    auto expect = req[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
        auto s = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
        net::async_write(stream_, net::buffer(*s),
                         net::bind_executor(strand_, [self = shared_from_this(), s](beast::error_code wec, size_t) {
                             if (wec) return self->close();
                             http::async_read(self->stream_, self->buffer_, *self->parser_,
                                              net::bind_executor(self->strand_, [self](beast::error_code e, size_t) {
                                                  self->on_body(e);
                                              }));
                         }));
        return;
    }
    http::async_read(
        stream_, buffer_, *parser_,
        net::bind_executor(strand_, [self = shared_from_this()](beast::error_code e, size_t) { self->on_body(e); }));
}

void HttpSession::on_body(beast::error_code ec) {
    if (ec == http::error::body_limit) return fail_http(413, "the request body is larger than the limit");
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset)
        return close();
    if (ec) {
        if (ec.category() == beast::error_code(http::error::bad_method).category())
            return fail_http(400, "malformed HTTP request: " + ec.message());
        return close();
    }
    HttpRequest req = parser_->release();
    keep_alive_ = req.keep_alive();
    in_exchange_ = true;
    stream_.expires_never();
    watch();
    try {
        handler_(shared_from_this(), std::move(req));
    } catch (const std::exception& e) {  // never let a handler's failure take the server down
        if (!closed_ && !writing_ && out_.empty())
            fail_http(500, std::string("internal error: ") + e.what());
        else
            close();
    }
}

void HttpSession::fail_http(int status, const std::string& message) {
    if (status_hook_) status_hook_(status);
    HttpResponse res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::connection, "close");
    std::string esc;
    for (char c : message) esc += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    res.body() =
        "{\"error\":{\"message\":\"" + esc + "\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}";
    keep_alive_ = false;
    in_exchange_ = true;
    stream_.expires_never();
    respond(std::move(res));
}

void HttpSession::watch() {
    // A read while the response is pending: its end (EOF, reset) means the client went away. Bytes that arrive
    // (a pipelined request) stay in the buffer for the next parse.
    if (watching_ || closed_ || buffer_.size() > 0) return;
    watching_ = true;
    stream_.expires_never();
    stream_.async_read_some(buffer_.prepare(4096),
                            net::bind_executor(strand_, [self = shared_from_this()](beast::error_code ec, size_t n) {
                                self->on_watch(ec, n);
                            }));
}

void HttpSession::on_watch(beast::error_code ec, size_t n) {
    watching_ = false;
    idle_timer_.cancel();
    if (ec) {
        if (in_exchange_) broken();
        close();
        return;
    }
    buffer_.commit(n);
    if (!in_exchange_) read_request();  // the next request began arriving while we were idle
}

void HttpSession::respond(HttpResponse&& res) {
    if (closed_) return;
    res.version(11);
    res.keep_alive(keep_alive_);
    res.prepare_payload();
    std::ostringstream os;
    os << res;
    out_.push_back(std::make_shared<std::string>(os.str()));
    finish_after_write_ = true;
    write_next();
}

void HttpSession::begin_stream(http::response<http::empty_body>&& head) {
    if (closed_) return;
    head.version(11);
    head.keep_alive(keep_alive_);
    head.chunked(true);
    out_.push_back(std::make_shared<std::string>(head_bytes(head.base())));
    write_next();
}

void HttpSession::stream_write(std::string data) {
    if (closed_ || data.empty()) return;
    out_.push_back(std::make_shared<std::string>(chunk(data)));
    write_next();
}

void HttpSession::end_stream() {
    if (closed_) return;
    out_.push_back(std::make_shared<std::string>("0\r\n\r\n"));
    finish_after_write_ = true;
    write_next();
}

void HttpSession::write_next() {
    if (writing_ || closed_) return;
    if (out_.empty()) {
        if (finish_after_write_) exchange_done();
        return;
    }
    writing_ = true;
    auto data = out_.front();
    out_.pop_front();
    stream_.expires_after(limits_.write_timeout);
    net::async_write(stream_, net::buffer(*data),
                     net::bind_executor(strand_, [self = shared_from_this(), data](beast::error_code ec, size_t) {
                         self->writing_ = false;
                         if (ec) {
                             self->broken();
                             self->close();
                             return;
                         }
                         self->write_next();
                     }));
}

void HttpSession::exchange_done() {
    finish_after_write_ = false;
    in_exchange_ = false;
    on_disconnect_ = nullptr;
    if (!keep_alive_) {
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
        // Let the client close first; the watch read (or a short linger) ends the socket.
        if (!watching_)
            close();
        else {
            idle_timer_.expires_after(std::chrono::seconds(1));
            idle_timer_.async_wait([self = shared_from_this()](beast::error_code e) {
                if (!e) self->close();
            });
        }
        return;
    }
    if (watching_) {
        idle_timer_.expires_after(limits_.idle_timeout);
        idle_timer_.async_wait([self = shared_from_this()](beast::error_code e) {
            if (!e && !self->in_exchange_) self->close();
        });
        return;
    }
    read_request();
}

void HttpSession::broken() {
    if (in_exchange_ && on_disconnect_) {
        auto f = std::move(on_disconnect_);
        on_disconnect_ = nullptr;
        f();
    }
}

void HttpSession::close() {
    if (closed_) return;
    closed_ = true;
    idle_timer_.cancel();
    broken();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
}

HttpListener::HttpListener(net::io_context& ioc, const tcp::endpoint& ep, const HttpLimits& limits, HttpHandler handler,
                           HttpStatusHook status_hook)
    : ioc_(ioc), acceptor_(ioc), limits_(limits), handler_(std::move(handler)), status_hook_(std::move(status_hook)) {
    acceptor_.open(ep.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen(net::socket_base::max_listen_connections);
}

void HttpListener::start() {
    accept();
}

void HttpListener::stop() {
    beast::error_code ec;
    acceptor_.close(ec);
}

void HttpListener::accept() {
    acceptor_.async_accept(net::make_strand(ioc_), [self = shared_from_this()](beast::error_code ec, tcp::socket s) {
        if (ec == net::error::operation_aborted || !self->acceptor_.is_open()) return;
        if (ec) {
            // Out of descriptors or memory: retry shortly instead of spinning on the error.
            auto t = std::make_shared<net::steady_timer>(self->ioc_, std::chrono::milliseconds(50));
            t->async_wait([self, t](const beast::error_code&) { self->accept(); });
            return;
        }
        beast::error_code nd;
        s.set_option(tcp::no_delay(true), nd);
        std::make_shared<HttpSession>(std::move(s), self->limits_, self->handler_, self->status_hook_)->start();
        self->accept();
    });
}

}  // namespace basalt::serve
