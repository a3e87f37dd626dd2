#include "shim/python/unwind_extent.h"

#include <link.h>

#include <cstring>

namespace vramshim::python {

namespace {

// DWARF pointer encodings (DW_EH_PE_*): a format in the low 4 bits, an application in bits 4-6.
constexpr uint8_t kAbsolute = 0x00;
constexpr uint8_t kUdata2 = 0x02;
constexpr uint8_t kUdata4 = 0x03;
constexpr uint8_t kUdata8 = 0x04;
constexpr uint8_t kSdata2 = 0x0a;
constexpr uint8_t kSdata4 = 0x0b;
constexpr uint8_t kSdata8 = 0x0c;
constexpr uint8_t kPcRelative = 0x10;
constexpr uint8_t kDataRelative = 0x30;
constexpr uint8_t kApplicationMask = 0x70;
constexpr uint8_t kOmit = 0xff;
// The search table's encoding every toolchain writes: 4-byte offsets from .eh_frame_hdr's start.
constexpr uint8_t kTableEncoding = kDataRelative | kSdata4;

template <typename T>
T read(const uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

// Reads a value in `encoding` at *at and advances past it; false for an encoding it does not know
// (indirect, aligned, or another application than absolute, pc- or data-relative).
bool read_encoded(const uint8_t*& at, uint8_t encoding, uintptr_t data_base, uintptr_t* value) {
  const uint8_t* const field = at;
  uint64_t raw = 0;
  switch (encoding & 0x0f) {
    case kAbsolute:
    case kUdata8:
    case kSdata8:
      raw = read<uint64_t>(at);
      at += 8;
      break;
    case kUdata4:
      raw = read<uint32_t>(at);
      at += 4;
      break;
    case kSdata4:
      raw = static_cast<uint64_t>(static_cast<int64_t>(read<int32_t>(at)));
      at += 4;
      break;
    case kUdata2:
      raw = read<uint16_t>(at);
      at += 2;
      break;
    case kSdata2:
      raw = static_cast<uint64_t>(static_cast<int64_t>(read<int16_t>(at)));
      at += 2;
      break;
    default:
      return false;
  }
  switch (encoding & kApplicationMask) {
    case 0:
      break;
    case kPcRelative:
      raw += reinterpret_cast<uintptr_t>(field);
      break;
    case kDataRelative:
      raw += data_base;
      break;
    default:
      return false;
  }
  *value = static_cast<uintptr_t>(raw);
  return true;
}

uint64_t read_uleb128(const uint8_t*& at) {
  uint64_t value = 0;
  int shift = 0;
  uint8_t byte;
  do {
    byte = *at++;
    if (shift < 64) value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    shift += 7;
  } while ((byte & 0x80) != 0);
  return value;
}

// The pointer encoding of the FDEs that use the CIE at `cie` (its 'R' augmentation; absolute
// without one). False for a CIE it cannot read.
bool fde_pointer_encoding(const uint8_t* cie, uint8_t* encoding) {
  const uint8_t* at = cie + 8;  // past the length and the CIE id
  const uint8_t version = *at++;
  const char* augmentation = reinterpret_cast<const char*>(at);
  at += std::strlen(augmentation) + 1;
  *encoding = kAbsolute;
  if (augmentation[0] != 'z') return augmentation[0] == '\0';
  read_uleb128(at);  // code alignment factor
  read_uleb128(at);  // data alignment factor (signed; only skipped)
  if (version == 1) {
    ++at;  // return address register
  } else {
    read_uleb128(at);
  }
  read_uleb128(at);  // augmentation data length
  for (const char* letter = augmentation + 1; *letter != '\0'; ++letter) {
    if (*letter == 'R') {
      *encoding = *at;
      return true;
    }
    if (*letter == 'P') {
      const uint8_t personality_encoding = *at++;
      uintptr_t ignored;
      if (!read_encoded(at, personality_encoding & 0x7f, 0, &ignored)) return false;
    } else if (*letter == 'L') {
      ++at;
    } else if (*letter != 'S' && *letter != 'B' && *letter != 'G') {
      return false;
    }
  }
  return true;
}

// The extent of the FDE at `fde`, which the search table says starts at `begin`.
std::optional<CodeExtent> fde_extent(const uint8_t* fde, uintptr_t begin) {
  if (read<uint32_t>(fde) == 0xffffffffu) return std::nullopt;  // 64-bit DWARF: not emitted here
  const uint8_t* const cie_pointer = fde + 4;
  const uint8_t* const cie = cie_pointer - read<uint32_t>(cie_pointer);
  uint8_t encoding;
  if (!fde_pointer_encoding(cie, &encoding)) return std::nullopt;
  const uint8_t* at = fde + 8;
  uintptr_t pc_begin;
  uintptr_t pc_range;
  if (!read_encoded(at, encoding, 0, &pc_begin) || pc_begin != begin ||
      !read_encoded(at, encoding & 0x0f, 0, &pc_range)) {
    return std::nullopt;
  }
  return CodeExtent{pc_begin, pc_begin + pc_range};
}

// The extent of the entry covering `address` in the .eh_frame_hdr at `header`.
std::optional<CodeExtent> search(const uint8_t* header, uintptr_t address) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(header);
  if (header[0] != 1 || header[2] == kOmit || header[3] != kTableEncoding) return std::nullopt;
  const uint8_t* at = header + 4;
  uintptr_t eh_frame;  // skipped: the table points at each entry
  uintptr_t count;
  if (!read_encoded(at, header[1], base, &eh_frame) || !read_encoded(at, header[2], base, &count)) {
    return std::nullopt;
  }
  // Pairs (start of the code, the FDE), sorted by start: find the last that starts at or below.
  const auto* table = reinterpret_cast<const int32_t*>(at);
  const auto start_of = [&](uintptr_t i) { return base + static_cast<intptr_t>(table[2 * i]); };
  if (count == 0 || address < start_of(0)) return std::nullopt;
  uintptr_t low = 0;
  uintptr_t high = count;  // start_of(low) <= address < start_of(high)
  while (high - low > 1) {
    const uintptr_t middle = low + (high - low) / 2;
    if (start_of(middle) <= address) {
      low = middle;
    } else {
      high = middle;
    }
  }
  const auto* fde =
      reinterpret_cast<const uint8_t*>(base + static_cast<intptr_t>(table[2 * low + 1]));
  const std::optional<CodeExtent> extent = fde_extent(fde, start_of(low));
  if (!extent || address >= extent->end) return std::nullopt;
  return extent;
}

struct ModuleSearch {
  uintptr_t address;
  const uint8_t* eh_frame_header = nullptr;
};

// dl_iterate_phdr's callback: the .eh_frame_hdr of the module that maps search->address.
int find_module(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<ModuleSearch*>(data);
  bool maps_address = false;
  const uint8_t* header = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type == PT_LOAD && search->address >= start &&
        search->address < start + segment.p_memsz) {
      maps_address = true;
    } else if (segment.p_type == PT_GNU_EH_FRAME) {
      header = reinterpret_cast<const uint8_t*>(start);
    }
  }
  if (!maps_address) return 0;
  search->eh_frame_header = header;
  return 1;
}

}  // namespace

std::optional<CodeExtent> unwind_extent_of(uintptr_t address) {
  ModuleSearch module{address};
  if (dl_iterate_phdr(find_module, &module) == 0 || module.eh_frame_header == nullptr) {
    return std::nullopt;
  }
  return search(module.eh_frame_header, address);
}

}  // namespace vramshim::python
