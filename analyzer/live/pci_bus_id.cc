#include "analyzer/live/pci_bus_id.h"

#include <charconv>
#include <cstdio>
#include <string_view>

namespace vramshim::live {
namespace {

// `text` as a hexadecimal number of 1 to `max_digits` digits, nothing else.
std::optional<unsigned> hexadecimal(std::string_view text, size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  unsigned value = 0;
  const std::from_chars_result parsed =
      std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::string> nvml_pci_bus_id(const nlohmann::json& entry) {
  if (!entry.is_object()) return std::nullopt;
  const auto member = entry.find("pci_bus_id");
  if (member == entry.end() || !member->is_string()) return std::nullopt;
  const std::string& text = member->get_ref<const std::string&>();
  const size_t bus_at = text.find(':');
  if (bus_at == std::string::npos) return std::nullopt;
  const size_t device_at = text.find(':', bus_at + 1);
  if (device_at == std::string::npos) return std::nullopt;
  const size_t function_at = text.find('.', device_at + 1);
  if (function_at == std::string::npos) return std::nullopt;
  const std::string_view whole = text;
  const std::optional<unsigned> domain = hexadecimal(whole.substr(0, bus_at), 8);
  const std::optional<unsigned> bus =
      hexadecimal(whole.substr(bus_at + 1, device_at - bus_at - 1), 2);
  const std::optional<unsigned> device =
      hexadecimal(whole.substr(device_at + 1, function_at - device_at - 1), 2);
  const std::optional<unsigned> function = hexadecimal(whole.substr(function_at + 1), 1);
  if (!domain || !bus || !device || !function || *function > 7) return std::nullopt;
  char written[32];
  std::snprintf(written, sizeof(written), "%08X:%02X:%02X.%X", *domain, *bus, *device, *function);
  return std::string(written);
}

}  // namespace vramshim::live
