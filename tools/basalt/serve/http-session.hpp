// The HTTP/1.1 layer of `basalt serve` on Boost.Beast: a listener and one session per connection, each on its own
// strand (asio keeps idle connections without a thread each). A session reads one request under header/body size
// limits and a read timeout, hands it to the router, writes a whole response or a chunked stream (Server-Sent
// Events), watches for the client going away while a response is pending, and keeps the connection alive.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>  // before asio: Boost 1.74's awaitable.hpp uses std::exchange under C++20

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace basalt::serve {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;

// Limits every connection is held to.
struct HttpLimits {
    size_t header_bytes = 16 * 1024;                 // request line + headers
    size_t body_bytes = 4 * 1024 * 1024;             // request body
    std::chrono::milliseconds read_timeout{10000};   // a whole request (headers and body) must arrive within it
    std::chrono::milliseconds idle_timeout{60000};   // a kept-alive connection with no request is closed after it
    std::chrono::milliseconds write_timeout{30000};  // one write to a client that does not read
    size_t stream_buffer_bytes = 1024 * 1024;        // stream output queued for a client that does not read
};

class HttpSession;
// Called on the session's strand with each complete request. It must eventually answer with respond() or a stream.
using HttpHandler = std::function<void(const std::shared_ptr<HttpSession>&, HttpRequest&&)>;
// Called for requests answered by the HTTP layer itself (limits, malformed HTTP): the status code.
using HttpStatusHook = std::function<void(int)>;

// One client connection. Every member below runs on the session's strand (post to executor() from other threads).
class HttpSession : public std::enable_shared_from_this<HttpSession> {
  public:
    HttpSession(tcp::socket&& socket, const HttpLimits& limits, HttpHandler handler, HttpStatusHook status_hook);
    // Starts reading the first request.
    void start();
    // The session's strand: post engine output here.
    net::any_io_executor executor() { return strand_; }
    // Writes a whole response (Content-Length set here), then reads the next request or closes.
    void respond(HttpResponse&& res);
    // Starts a chunked response with this head (status, Content-Type ...), then stream_write pieces, then end_stream.
    void begin_stream(http::response<http::empty_body>&& head);
    // Queues one chunk of a started stream (written in order).
    void stream_write(std::string data);
    // Writes the last chunk; then reads the next request or closes.
    void end_stream();
    // f runs (once, on the strand) if the client disconnects, a write fails or a stream's queued output passes
    // stream_buffer_bytes before the pending response is done.
    void on_disconnect(std::function<void()> f) { on_disconnect_ = std::move(f); }
    // True once a stream was cut because its client did not read (stream_buffer_bytes queued).
    bool overflowed() const { return overflowed_; }
    // True once the connection is closed or broken: further writes are dropped.
    bool closed() const { return closed_; }
    // Closes the connection now (server shutdown).
    void close();

  private:
    void read_request();
    void on_header(beast::error_code ec);
    void on_body(beast::error_code ec);
    void fail_http(int status, const std::string& message);
    void timed_out();
    void probe();
    void watch();
    void on_watch(beast::error_code ec, size_t n);
    void write_next();
    void exchange_done();
    void broken();

    net::any_io_executor strand_;  // the connection's strand (the accepted socket's executor)
    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    HttpLimits limits_;
    HttpHandler handler_;
    HttpStatusHook status_hook_;
    std::function<void()> on_disconnect_;
    bool keep_alive_ = false;
    bool in_exchange_ = false;  // a request was handed over and its response is not finished
    bool watching_ = false;     // a read is pending to notice a disconnect
    bool half_closed_ = false;  // the client ended its sending side (EOF): it may still read the response
    bool resume_read_ = false;  // the watch read was cancelled to hand the socket to read_request
    bool overflowed_ = false;
    bool response_started_ = false;  // respond() or begin_stream() queued the response's first bytes
    bool http11_ = true;             // the pending request is HTTP/1.1 (1xx interim responses allowed)
    int probes_ = 0;                 // interim responses sent to a half-closed client this exchange
    bool closed_ = false;
    // Output: whole responses and stream chunks are queued as byte strings and written one at a time.
    std::deque<std::shared_ptr<std::string>> out_;
    size_t out_bytes_ = 0;  // bytes in out_ and in the write in progress
    bool writing_ = false;
    bool finish_after_write_ = false;  // the exchange is over once out_ drains
    net::steady_timer idle_timer_;     // closes a kept-alive connection whose watch read is still pending
    net::steady_timer probe_timer_;    // the next probe of a half-closed client
};

// Accepts connections on an endpoint and starts a session for each. Runs on the io_context's threads.
class HttpListener : public std::enable_shared_from_this<HttpListener> {
  public:
    // Binds and listens; throws boost::system::system_error naming the address on failure.
    HttpListener(net::io_context& ioc, const tcp::endpoint& ep, const HttpLimits& limits, HttpHandler handler,
                 HttpStatusHook status_hook);
    // Starts accepting.
    void start();
    // Stops accepting (running sessions continue).
    void stop();
    // The bound port (useful with port 0).
    unsigned short port() const { return acceptor_.local_endpoint().port(); }

  private:
    void accept();
    net::io_context& ioc_;
    tcp::acceptor acceptor_;
    HttpLimits limits_;
    HttpHandler handler_;
    HttpStatusHook status_hook_;
};

}  // namespace basalt::serve
