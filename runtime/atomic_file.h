// Files sdspeed writes (caches, results, dumps) are written to a temporary file in
// the same directory and renamed over the target, so a reader never sees half a file
// and an interrupted run leaves the previous version intact.
//
// What the path is decides how (issue #19: `-o /dev/null` must not replace the device
// node with a regular file):
//   new path or regular file   temporary file + fsync + rename (keeps the file's mode)
//   character device or FIFO   written through directly (/dev/null, a pipe a reader waits on)
//   symbolic link              its final target is replaced atomically; the link stays a link
//   directory, socket, ...     Error naming the path
// A temporary file is deleted if SIGINT or SIGTERM arrives while it exists (the
// handlers are installed on the first write: runtime/temp_files.h).
#pragma once

#include <string>

namespace sdspeed {

// Throws Error naming the path on failure. Creates missing parent directories.
void writeFileAtomically(const std::string& path, const std::string& content);
// Empty optional-like: returns false when the file does not exist or cannot be read.
bool readFile(const std::string& path, std::string& content);

// Fails early, before a long run, where writeFileAtomically(path) would fail at its end:
// throws Error "WHAT 'PATH': why" (what: the flag or key that named it, e.g. "-o") when
// the path is a directory, is not writable, or its nearest existing ancestor is not a
// writable directory (missing directories below it are created by the write).
void checkWritable(const std::string& path, const std::string& what);

}  // namespace sdspeed
