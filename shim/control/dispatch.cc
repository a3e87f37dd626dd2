#include "shim/control/dispatch.h"

#include <unistd.h>

#include "shim/control/request.h"

namespace vramshim::control {

std::string error_response(std::string_view message) {
  support::StringSink text;
  support::JsonWriter out(text);
  out.begin_object();
  out.key("ok").boolean(false);
  out.key("error").string(message);
  out.end_object();
  return text.text();
}

std::string respond_to(std::string_view line, CommandHandler& handler) {
  const ParsedRequest parsed = parse_request(line);
  if (!parsed.request) return error_response(parsed.error);
  const Request& request = *parsed.request;

  support::StringSink text;
  support::JsonWriter out(text);
  out.begin_object();
  out.key("ok").boolean(true);
  Outcome outcome;
  switch (request.kind) {
    case RequestKind::kPing:
      out.key("pid").number(::getpid());
      break;
    case RequestKind::kStats:
      outcome = handler.stats(out);
      break;
    case RequestKind::kSites:
      outcome = handler.sites(request.count, out);
      break;
    case RequestKind::kFlush:
      outcome = handler.flush(Trigger::kSocket, request.deep, out);
      break;
    case RequestKind::kReport:
      outcome = handler.report(Trigger::kSocket, request.path, out);
      break;
    case RequestKind::kTrim:
      outcome = handler.trim(request.bytes, out);
      break;
    case RequestKind::kLimit:
      outcome = handler.set_limit(request.limit, out);
      break;
  }
  if (!outcome.ok()) return error_response(outcome.error);
  out.end_object();
  return text.text();
}

}  // namespace vramshim::control
