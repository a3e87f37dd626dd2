// One HTTP/1.x request head (request line and header fields), read from the bytes a client sent,
// for the exporter's server (http_server.h). Only what a metrics endpoint needs: no bodies, no
// continuation lines, no absolute-form targets beyond their path.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace vramshim::http {

struct Request {
  std::string method;
  std::string path;       // the target up to '?'
  int minor_version = 1;  // HTTP/1.<minor_version>
  std::vector<std::pair<std::string, std::string>> fields;
  // When the whole head had arrived (the server sets it): a handler that waits bounds its wait from
  // there, time spent queued for a thread included.
  std::chrono::steady_clock::time_point arrived;

  // The value of the first field named `name` (compared without case), or "" if none.
  std::string field(std::string_view name) const;
  // Whether the connection stays open after the answer (HTTP/1.1 unless "Connection: close",
  // HTTP/1.0 only with "Connection: keep-alive").
  bool keep_alive() const;
};

// A head that is not a request this server answers: the status to answer it with, the connection
// then closed.
struct Refusal {
  int status;
  std::string reason;
};

// The length of the head at the start of `bytes`, through its empty line ("\r\n\r\n", or "\n\n"
// from lenient clients), or nullopt while the empty line has not arrived.
std::optional<size_t> head_length(std::string_view bytes);

// Parses a complete head (head_length's bytes). A request with a body (Content-Length other than
// 0, any Transfer-Encoding) is refused: nothing here takes one, and reading it only costs.
std::variant<Request, Refusal> parse_request_head(std::string_view head);

}  // namespace vramshim::http
