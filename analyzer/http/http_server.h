// A small HTTP/1.1 server for the exporter, made to be exposed on a node's network as root: what
// a client can make it hold is bounded (one request head per connection, a fixed socket send
// buffer, no copy of an answer body: bodies are shared), and so is how long (to send a request,
// to take an answer, to its last byte), and the number of connections; no client can hold a
// thread: one poll loop reads requests and writes answers, and a few threads only run the handler
// on complete requests. A connection ends cleanly once its client has taken all it was sent (a
// client that shut its side down after its request included), and is reset only when it has not
// in time.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "analyzer/http/http_request.h"

namespace vramshim::http {

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  // Shared, so that one text (a collection's metrics) sent on many connections is held once.
  std::shared_ptr<const std::string> body;
};

// A response whose body is `text`.
Response text_response(int status, std::string text,
                       std::string content_type = "text/plain; charset=utf-8");

struct ServerLimits {
  size_t max_head_bytes = 8192;  // a longer request head is answered 431
  // From a connection's opening (or its client's taking the whole of its last answer) to a request.
  int request_timeout_ms = 5000;
  // For the client to take a whole answer, to its last byte: what the kernel still holds once the
  // server is done with the answer included, kept alive or not (counted anew when the client shuts
  // its side down after a kept-alive answer). Past it, the connection is reset.
  int answer_timeout_ms = 10000;
  // Past it, a connection that is not being handled makes room: the one waiting longest for its
  // request (not one still taking its last answer), else the one whose answer has not been taken
  // for longest, if for a second or more. While none may go, new connections wait in the listen
  // backlog. While it is reached, each answer closes its connection ("Connection: close").
  size_t max_connections = 512;
  size_t handler_threads = 32;  // requests handled at once; the rest wait for a thread
  // Each connection's kernel buffers (SO_SNDBUF, SO_RCVBUF), which a client that sends requests
  // without reading the answers would fill: the kernel's own defaults grow to megabytes.
  int send_buffer_bytes = 64 << 10;
  int receive_buffer_bytes = 16 << 10;
};

class Server {
 public:
  // `handler` answers GET and HEAD requests (HEAD: the body is left out); other methods get 405.
  // It may take as long as it needs: a slow one holds its thread, never the loop.
  Server(std::function<Response(const Request&)> handler, ServerLimits limits = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Listens on `host` ("" or "0.0.0.0": every IPv4 address; "::": every address) and `port` (0:
  // any free one), with SO_REUSEADDR and the system's largest backlog; returns the port. Throws
  // std::runtime_error when it cannot, a port already served included.
  int listen(const std::string& host, int port);

  // Serves until `stop_fd` becomes readable, then returns once the handlers running have ended;
  // throws std::runtime_error if it cannot go on (it cannot wait for its sockets, or is out of
  // memory), after the same.
  void serve(int stop_fd);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vramshim::http
