// The on-disk form of one program cache entry: a fixed header, then the driver's
// binary. A truncated, zeroed or bit-flipped entry handed to clCreateProgramWithBinary
// crashes some drivers (PoCL: SIGSEGV or an assertion) on every run until the cache
// is deleted, so every entry is checked here, before the driver sees a byte of it.
//
// Header, 40 bytes, integers little-endian:
//   0  magic "SDSPPRG\n"            8 bytes
//   8  format version (1)           u32
//  12  header length (40)           u32
//  16  FNV-1a of the cache key      u64  (an entry renamed or copied to another key)
//  24  binary length                u64  (truncation, or bytes appended)
//  32  FNV-1a of the binary         u64  (flipped or zeroed bytes)
// Every header byte is compared with an expected value, so a flipped header bit is
// caught too. FNV-1a (runtime/hash.h, which also adds a 0xff separator byte) is not
// cryptographic: it guards against damage, not against someone forging entries.
// Files written before the header (a bare driver binary) fail the magic check.
#pragma once

#include <string>
#include <string_view>

namespace sdspeed {

inline constexpr size_t kProgramEntryHeaderBytes = 40;

std::string encodeProgramEntry(std::string_view key, std::string_view binary);

struct DecodedProgramEntry {
  std::string binary;  // valid when error is empty
  std::string error;   // why the entry is unusable, e.g. "binary checksum mismatch"
  bool ok() const { return error.empty(); }
};

// Never throws and never reads past `bytes`: fuzzed (tests/fuzz/fuzz_program_entry.cpp).
DecodedProgramEntry decodeProgramEntry(std::string_view bytes, std::string_view key);

}  // namespace sdspeed
