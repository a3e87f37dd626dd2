#include "analyzer/http/http_request.h"

#include <algorithm>
#include <cctype>

namespace vramshim::http {
namespace {

// A head of 8 KiB could hold thousands of tiny fields, each kept apart.
constexpr size_t kMaxFields = 100;

bool same_without_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// RFC 9110's token characters: method and field names.
bool is_token(std::string_view text) {
  static constexpr std::string_view kPunctuation = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || kPunctuation.find(c) != kPunctuation.npos;
  });
}

bool is_field_value(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte == '\t' || (byte >= 0x20 && byte != 0x7f);
  });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// The next line of `rest` without its "\n" or "\r\n", taken off `rest`.
std::string_view next_line(std::string_view& rest) {
  const size_t end = rest.find('\n');
  std::string_view line = rest.substr(0, end);
  rest.remove_prefix(end == rest.npos ? rest.size() : end + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

Refusal bad_request(std::string why) { return {400, std::move(why)}; }

}  // namespace

std::string Request::field(std::string_view name) const {
  for (const auto& [field_name, value] : fields) {
    if (same_without_case(field_name, name)) return value;
  }
  return {};
}

bool Request::keep_alive() const {
  const std::string connection = field("Connection");
  if (minor_version == 0) return same_without_case(connection, "keep-alive");
  return !same_without_case(connection, "close");
}

std::optional<size_t> head_length(std::string_view bytes) {
  for (size_t newline = bytes.find('\n'); newline != bytes.npos;
       newline = bytes.find('\n', newline + 1)) {
    if (newline + 1 < bytes.size() && bytes[newline + 1] == '\n') return newline + 2;
    if (newline + 2 < bytes.size() && bytes[newline + 1] == '\r' && bytes[newline + 2] == '\n') {
      return newline + 3;
    }
  }
  return std::nullopt;
}

std::variant<Request, Refusal> parse_request_head(std::string_view head) {
  Request request;
  std::string_view rest = head;
  const std::string_view request_line = next_line(rest);
  const size_t first_space = request_line.find(' ');
  const size_t last_space = request_line.rfind(' ');
  if (first_space == request_line.npos || first_space == last_space) {
    return bad_request("the request line is not METHOD TARGET VERSION");
  }
  const std::string_view method = request_line.substr(0, first_space);
  std::string_view target = request_line.substr(first_space + 1, last_space - first_space - 1);
  const std::string_view version = request_line.substr(last_space + 1);
  if (!is_token(method)) return bad_request("the method is not a token");
  if (version == "HTTP/1.1") {
    request.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    request.minor_version = 0;
  } else if (version.substr(0, 5) == "HTTP/") {
    return Refusal{505, "only HTTP/1.0 and HTTP/1.1 are served"};
  } else {
    return bad_request("the request line ends with no HTTP version");
  }
  if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) {
        return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
      })) {
    return bad_request("the target is empty or holds spaces or control characters");
  }
  // The absolute form (proxies send it): its path.
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.substr(0, scheme.size()) == scheme) {
      const size_t path = target.find('/', scheme.size());
      target = path == target.npos ? std::string_view("/") : target.substr(path);
    }
  }
  if (target.front() != '/') return bad_request("the target is not a path");
  request.method = method;
  request.path = target.substr(0, target.find('?'));

  while (!rest.empty()) {
    const std::string_view line = next_line(rest);
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') {
      return bad_request("folded header lines are not accepted");
    }
    const size_t colon = line.find(':');
    if (colon == line.npos || !is_token(line.substr(0, colon))) {
      return bad_request("a header line is not NAME: VALUE");
    }
    const std::string_view value = trim(line.substr(colon + 1));
    if (!is_field_value(value)) return bad_request("a header value holds control characters");
    if (request.fields.size() == kMaxFields) {
      return Refusal{431, "more than " + std::to_string(kMaxFields) + " header fields"};
    }
    request.fields.emplace_back(line.substr(0, colon), value);
  }

  size_t content_lengths = 0;
  for (const auto& [name, value] : request.fields) {
    if (same_without_case(name, "Transfer-Encoding")) {
      return Refusal{413, "requests with a body are not served"};
    }
    if (same_without_case(name, "Content-Length")) {
      if (++content_lengths > 1) return bad_request("more than one Content-Length");
      if (value.empty() || value.find_first_not_of('0') != value.npos) {
        return Refusal{413, "requests with a body are not served"};
      }
    }
  }
  return request;
}

}  // namespace vramshim::http
