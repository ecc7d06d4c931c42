// A plain text table with aligned columns, for terminal output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sdspeed {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& os) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fmtSci(double v, int digits = 2);  // "1.23e-05"
std::string fmtFixed(double v, int digits);
std::string fmtBytes(size_t bytes);  // "0", "512 B", "3.1 KiB", "64.0 MiB", "1.0 GiB"

}  // namespace sdspeed
