#include "runtime/program_entry.h"

#include <cstdint>

#include "runtime/hash.h"

namespace sdspeed {
namespace {

constexpr std::string_view kMagic{"SDSPPRG\n", 8};
constexpr uint32_t kVersion = 1;

// Explicit little-endian bytes: the same file reads the same on any host.
void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

uint64_t checksum(std::string_view s) { return Fnv1a().add(s).value(); }

}  // namespace

std::string encodeProgramEntry(std::string_view key, std::string_view binary) {
  std::string out(kMagic);
  put(out, kVersion, 4);
  put(out, kProgramEntryHeaderBytes, 4);
  put(out, checksum(key), 8);
  put(out, binary.size(), 8);
  put(out, checksum(binary), 8);
  out.append(binary);
  return out;
}

DecodedProgramEntry decodeProgramEntry(std::string_view bytes, std::string_view key) {
  auto fail = [](std::string why) { return DecodedProgramEntry{{}, std::move(why)}; };
  if (bytes.size() < kProgramEntryHeaderBytes)
    return fail("shorter than its header (" + std::to_string(bytes.size()) + " bytes)");
  if (bytes.substr(0, kMagic.size()) != kMagic) return fail("no sdspeed header (damaged, or written by an older sdspeed)");
  if (get(bytes, 8, 4) != kVersion) return fail("unknown format version " + std::to_string(get(bytes, 8, 4)));
  if (get(bytes, 12, 4) != kProgramEntryHeaderBytes) return fail("wrong header length");
  if (get(bytes, 16, 8) != checksum(key)) return fail("written for another cache key");
  const uint64_t length = get(bytes, 24, 8);
  const size_t have = bytes.size() - kProgramEntryHeaderBytes;
  if (length != have)
    return fail("binary is " + std::to_string(have) + " bytes, header says " + std::to_string(length));
  if (length == 0) return fail("empty binary");
  const std::string_view binary = bytes.substr(kProgramEntryHeaderBytes);
  if (get(bytes, 32, 8) != checksum(binary)) return fail("binary checksum mismatch");
  return {std::string(binary), {}};
}

}  // namespace sdspeed
