// The error every part of sdspeed reports to a user, in a header of its own so that code
// with no GPU API in it (the memory planner, the pipeline's CPU side, file writing) needs
// no GPU header and links no GPU library: the CLI prints what() as one line.
#pragma once

#include <stdexcept>

namespace sdspeed {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sdspeed
