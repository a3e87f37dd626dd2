#include "analyzer/render/listed_stacks.h"

#include <algorithm>
#include <string>

#include "analyzer/render/text_report.h"
#include "analyzer/render/view_json.h"

namespace vramshim::analyzer {

std::string listed_line(std::string text) {
  if (text.size() <= kListedLineBytes) return text;
  size_t end = kListedLineBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "…";
}

std::string no_stack_line(const Report& report) {
  if (report.reason == "import") {
    return "[no stack: allocated before PyTorch recorded its history, or recorded without stacks]";
  }
  return "[no stack: recorded with stacks off, or every frame hidden]";
}

std::vector<std::string> StackLister::lines(const std::vector<uint32_t>& frames) {
  std::vector<std::string> lines;
  if (left_ == 0) {
    lines.push_back("… left out: the page lists no more stacks (its size is bounded)");
    return lines;
  }
  const size_t listed = std::min(frames.size(), max_frames_);
  for (size_t i = 0; i < listed; ++i) {
    std::string line = listed_line(describe_frame(table_.frame(frames[i])));
    left_ -= std::min(left_, line.size());
    lines.push_back(std::move(line));
  }
  if (frames.size() > listed) {
    lines.push_back("… " + std::to_string(frames.size() - listed) + " more frames");
  }
  return lines;
}

nlohmann::json StackLister::objects(const std::vector<uint32_t>& frames, size_t& omitted) {
  // A frame object's members but its names, at most: keys, a line, an offset, a kind.
  constexpr size_t kFrameObjectBytes = 128;
  nlohmann::json list = nlohmann::json::array();
  const size_t listed = std::min(frames.size(), max_frames_);
  for (size_t i = 0; i < listed; ++i) {
    const DisplayFrame& frame = table_.frame(frames[i]);
    const size_t bytes =
        kFrameObjectBytes + frame.function.size() + frame.file.size() + frame.module.size();
    if (bytes > left_) {
      left_ = 0;
      break;
    }
    left_ -= bytes;
    list.push_back(frame_json(frame));
  }
  omitted = frames.size() - list.size();
  return list;
}

nlohmann::json StackLister::stack(int64_t stack) {
  std::vector<uint32_t> visible;
  table_.visible_stack(stack, visible);
  return frames(visible);
}

}  // namespace vramshim::analyzer
