// Files sdspeed writes (caches, results, dumps) are written to a temporary file in
// the same directory and renamed over the target, so a reader never sees half a file
// and an interrupted run leaves the previous version intact.
#pragma once

#include <string>

namespace sdspeed {

// Throws Error naming the path on failure. Creates missing parent directories.
void writeFileAtomically(const std::string& path, const std::string& content);
// Empty optional-like: returns false when the file does not exist or cannot be read.
bool readFile(const std::string& path, std::string& content);

}  // namespace sdspeed
