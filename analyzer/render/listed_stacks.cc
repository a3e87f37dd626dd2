#include "analyzer/render/listed_stacks.h"

#include <algorithm>
#include <string>

#include "analyzer/render/text_report.h"

namespace vramshim::analyzer {
namespace {

// `line` cut to `bytes` at a UTF-8 character boundary, with "…" when cut.
std::string cut_line(std::string line, size_t bytes) {
  if (line.size() <= bytes) return line;
  size_t end = bytes;
  while (end > 0 && (static_cast<unsigned char>(line[end]) & 0xC0) == 0x80) --end;
  line.resize(end);
  return line + "…";
}

}  // namespace

nlohmann::json StackLister::frames(const std::vector<uint32_t>& frames) {
  nlohmann::json lines = nlohmann::json::array();
  if (left_ == 0) {
    lines.push_back("… left out: the page lists no more stacks (its size is bounded)");
    return lines;
  }
  const size_t listed = std::min(frames.size(), kListedFrames);
  for (size_t i = 0; i < listed; ++i) {
    std::string line = cut_line(describe_frame(table_.frame(frames[i])), kListedLineBytes);
    left_ -= std::min(left_, line.size());
    lines.push_back(std::move(line));
  }
  if (frames.size() > listed) {
    lines.push_back("… " + std::to_string(frames.size() - listed) + " more frames");
  }
  return lines;
}

nlohmann::json StackLister::stack(int64_t stack) {
  std::vector<uint32_t> visible;
  table_.visible_stack(stack, visible);
  return frames(visible);
}

}  // namespace vramshim::analyzer
