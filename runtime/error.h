// The error every part of sdspeed reports to a user, in a header of its own so that code
// with no GPU API in it (the memory planner, the pipeline's CPU side, file writing) needs
// no GPU header and links no GPU library: the CLI prints what() as one line.
#pragma once

#include <stdexcept>

namespace sdspeed {

// Exit codes (cli/main.cpp): 0 success; 1 a failed check or run; 2 bad input; 3 a tune
// whose points failed. An Error is bad input (a flag, file, config, database or model
// that cannot be used: exit 2) unless it is a RunFailure.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The input was usable but the run failed: a device or driver error (ClError), a
// non-finite value appearing in a run, an allocation the device refused. Exit 1.
class RunFailure : public Error {
 public:
  using Error::Error;
};

// Thrown when a built kernel cannot run a launch on this device (the compiled
// kernel's work-group or local-memory limit is lower than the family's rules
// assumed): the harness records the point as unsupported, not as a failure.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

}  // namespace sdspeed
