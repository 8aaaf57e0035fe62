#include "http-session.hpp"

#include <iterator>
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
      idle_timer_(strand_),
      probe_timer_(strand_) {}

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
    if (ec == beast::error::timeout) return timed_out();
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset) {
        return close();
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
    if (ec == beast::error::timeout) return timed_out();
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
    http11_ = req.version() >= 11;
    response_started_ = false;
    probes_ = 0;
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

void HttpSession::timed_out() {
    // A request not complete within --read-timeout: the stream has closed the socket, so no 408 can be sent (nginx
    // and llama-server close the same way). A request that had begun arriving counts as 408; an idle kept-alive
    // connection that simply ends counts as nothing.
    if (status_hook_ && parser_ && (parser_->got_some() || buffer_.size() > 0)) status_hook_(408);
    close();
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
    // A read while the response is pending. A reset or an error means the client went away. The end of its input
    // (EOF) is a half-close: the client may still be reading, so the response is still written, and a client that
    // really left is noticed by the write that fails. Bytes that arrive (a pipelined request) are kept for the next
    // parse and the read is armed again, up to one request's worth; beyond that TCP holds the client back.
    if (watching_ || closed_ || half_closed_) return;
    if (buffer_.size() >= limits_.header_bytes + limits_.body_bytes) return;
    watching_ = true;
    stream_.expires_never();  // the read's timer only: a write in progress keeps its --write-timeout
    stream_.async_read_some(buffer_.prepare(4096),
                            net::bind_executor(strand_, [self = shared_from_this()](beast::error_code ec, size_t n) {
                                self->on_watch(ec, n);
                            }));
}

void HttpSession::on_watch(beast::error_code ec, size_t n) {
    watching_ = false;
    idle_timer_.cancel();
    if (!ec) buffer_.commit(n);
    if (resume_read_) {  // exchange_done cancelled this read to parse the pipelined request already buffered
        resume_read_ = false;
        if (closed_ || (ec && ec != net::error::operation_aborted)) return close();
        return read_request();
    }
    if (in_exchange_ && (ec == net::error::eof || ec == http::error::end_of_stream)) {
        half_closed_ = true;
        if (buffer_.size() == 0) keep_alive_ = false;  // nothing more will come: the response says close
        return probe();
    }
    if (ec) {
        if (in_exchange_) broken();
        close();
        return;
    }
    if (in_exchange_) return watch();  // keep noticing a client that leaves after pipelining bytes
    read_request();                    // the next request began arriving while we were idle
}

void HttpSession::probe() {
    // A client that ended its input (EOF) and waits for a response is told apart from one that left by writing to
    // it: an interim "100 Continue" (which HTTP/1.1 clients must accept and skip before the final response). A
    // client that closed its socket answers the first with a reset, so a later one fails and cancels the request.
    // A stream needs no probe (its own writes fail); HTTP/1.0 allows no interim response.
    static constexpr std::chrono::milliseconds kDelays[] = {
        std::chrono::milliseconds(0), std::chrono::milliseconds(200), std::chrono::milliseconds(1000),
        std::chrono::milliseconds(5000)};
    if (closed_ || !in_exchange_ || response_started_ || !http11_) return;
    if (probes_ > 0 && !writing_ && out_.empty()) {
        auto s = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
        out_bytes_ += s->size();
        out_.push_back(std::move(s));
        write_next();
    }
    if (probes_ >= static_cast<int>(std::size(kDelays))) return;
    probe_timer_.expires_after(kDelays[probes_++]);
    probe_timer_.async_wait([self = shared_from_this()](beast::error_code e) {
        if (!e) self->probe();
    });
}

void HttpSession::respond(HttpResponse&& res) {
    if (closed_) return;
    response_started_ = true;
    probe_timer_.cancel();
    res.version(11);
    res.keep_alive(keep_alive_);
    res.prepare_payload();
    std::ostringstream os;
    os << res;
    out_.push_back(std::make_shared<std::string>(os.str()));
    out_bytes_ += out_.back()->size();
    finish_after_write_ = true;
    write_next();
}

void HttpSession::begin_stream(http::response<http::empty_body>&& head) {
    if (closed_) return;
    response_started_ = true;
    probe_timer_.cancel();
    head.version(11);
    head.keep_alive(keep_alive_);
    head.chunked(true);
    out_.push_back(std::make_shared<std::string>(head_bytes(head.base())));
    out_bytes_ += out_.back()->size();
    write_next();
}

void HttpSession::stream_write(std::string data) {
    if (closed_ || data.empty()) return;
    auto c = std::make_shared<std::string>(chunk(data));
    if (out_bytes_ + c->size() > limits_.stream_buffer_bytes) {
        // The client does not read: stop here rather than hold its output without bound (its request is cancelled).
        overflowed_ = true;
        close();
        return;
    }
    out_bytes_ += c->size();
    out_.push_back(std::move(c));
    write_next();
}

void HttpSession::end_stream() {
    if (closed_) return;
    out_.push_back(std::make_shared<std::string>("0\r\n\r\n"));
    out_bytes_ += out_.back()->size();
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
                         self->out_bytes_ -= data->size();
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
    if (half_closed_) {  // the client sends nothing more: answer what it pipelined, then close
        if (buffer_.size() > 0) return read_request();
        return close();
    }
    if (watching_ && buffer_.size() > 0) {
        // A pipelined request is already buffered: stop the watch read and parse it (on_watch resumes).
        resume_read_ = true;
        beast::error_code ec;
        stream_.socket().cancel(ec);
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
    probe_timer_.cancel();
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
