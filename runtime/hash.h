// A stable 64-bit FNV-1a hash: the same bytes hash the same on every run and
// machine (std::hash promises neither), so it can name on-disk cache files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sdspeed {

class Fnv1a {
 public:
  Fnv1a& add(std::string_view s) {
    for (unsigned char c : s) h_ = (h_ ^ c) * 1099511628211ull;
    // A separator byte so ("ab","c") and ("a","bc") differ.
    h_ = (h_ ^ 0xffu) * 1099511628211ull;
    return *this;
  }
  uint64_t value() const { return h_; }
  std::string hex() const;

 private:
  uint64_t h_ = 14695981039346656037ull;
};

inline std::string Fnv1a::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 0; i < 16; ++i) s[15 - i] = digits[(h_ >> (4 * i)) & 0xf];
  return s;
}

}  // namespace sdspeed
