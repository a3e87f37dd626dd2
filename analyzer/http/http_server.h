// A small HTTP/1.1 server for the exporter, made to be exposed: every connection's memory and time
// are bounded (its request head, its wait for a request, its answer's delivery), the numbers of
// connections and of answers held are bounded, and no client can hold a thread: one poll loop
// reads requests and writes answers, and a few threads only run the handler on complete requests.
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
  std::string body;
};

struct ServerLimits {
  size_t max_head_bytes = 8192;   // a longer request head is answered 431
  int request_timeout_ms = 5000;  // from a connection's opening (or its last answer) to a request
  int answer_timeout_ms = 10000;  // for the client to take a whole answer
  // Past it, the connection waiting longest for its request makes room; while none waits for one,
  // new connections wait in the listen backlog. Each holds at most one request head.
  size_t max_connections = 512;
  // Answers held at once (being made or sent); more requests wait for one to be done. Each may be
  // a node's metrics, up to about a MiB, so this bounds that memory.
  size_t max_answers = 64;
  size_t handler_threads = 32;  // requests handled at once; the rest wait for a thread
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
  // throws std::runtime_error if it cannot wait for its sockets.
  void serve(int stop_fd);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vramshim::http
