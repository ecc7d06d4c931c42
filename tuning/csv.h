// Minimal RFC 4180 CSV: fields with a comma, quote, CR or LF are quoted and quotes
// doubled. Hand-written (about 60 lines, tested in tests/test_csv.cpp) because
// libcsv-dev is not on the GPU machine's image, where sdspeed must build unchanged.
#pragma once

#include <string>
#include <vector>

namespace sdspeed {

std::string csvRow(const std::vector<std::string>& fields);  // one line, with "\n"
// Parses a whole document; throws Error on an unterminated quoted field.
std::vector<std::vector<std::string>> csvParse(const std::string& text);

}  // namespace sdspeed
