// The outcome of running one configuration (after KTT): never silently dropped.
#pragma once

#include <string>

namespace sdspeed {

enum class Status { Ok, Unsupported, BuildFailed, RunFailed, Inaccurate };

inline const char* statusName(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::Unsupported: return "unsupported";
    case Status::BuildFailed: return "build_failed";
    case Status::RunFailed: return "run_failed";
    case Status::Inaccurate: return "inaccurate";
  }
  return "?";
}

}  // namespace sdspeed
