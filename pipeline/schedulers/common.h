// Internal to pipeline/schedulers: small helpers the four schedulers share.
#pragma once

#include <span>
#include <string>

#include "runtime/error.h"

namespace sdspeed::sched {

inline void checkSteps(const char* name, int n, int numTrain) {
  if (n < 1 || n > numTrain)
    throw Error(std::string(name) + ": num_inference_steps " + std::to_string(n) + " must be in [1, " +
                std::to_string(numTrain) + "]");
}

inline void checkSizes(const char* name, std::span<const float> noise, std::span<const float> sample) {
  if (noise.size() != sample.size())
    throw Error(std::string(name) + ": step: noise prediction has " + std::to_string(noise.size()) +
                " values, the sample " + std::to_string(sample.size()));
}

// The integer timestep t as an index into the training tables.
inline int timestepIndex(const char* name, float t, int numTrain) {
  int i = static_cast<int>(t);
  if (static_cast<float>(i) != t || i < 0 || i >= numTrain)
    throw Error(std::string(name) + ": timestep " + std::to_string(t) + " is not an integer in [0, " +
                std::to_string(numTrain) + ")");
  return i;
}

}  // namespace sdspeed::sched
