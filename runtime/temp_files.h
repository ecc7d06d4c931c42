// The temporary files writeFileAtomically has open, so SIGINT or SIGTERM (Ctrl-C, a
// killed sweep) does not leave `NAME.tmp.PID...` files beside the results. A signal
// handler may only call async-signal-safe functions, so the registry is a fixed table
// of atomics and char arrays (no allocation, no locks) and the handler only unlinks,
// then re-raises the signal with its previous action (the default: the process ends
// with the signal's status, as it would have without us).
#pragma once

#include <string>

namespace sdspeed {

// Returns a slot for unregisterTempFile, or -1 when the table is full or the path is
// too long (that file is then not removed on a signal; nothing else changes).
int registerTempFile(const std::string& path);
void unregisterTempFile(int slot);
// What the handler runs; returns how many files it unlinked. Exposed for tests.
int removeRegisteredTempFiles();
// Installs the SIGINT and SIGTERM handlers once (later calls do nothing).
void installTempFileSignalCleanup();

}  // namespace sdspeed
