// What graph_executor.cpp shares with the files that hold the rest of GraphExecutor's
// members (graph_executor_budget.cpp: the footprint and the memory budget's steps;
// graph_executor_weights.cpp: weights read from the checkpoint file). Not for other users.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/exec/graph_executor.h"

namespace sdspeed {
namespace executor_detail {

// "1.234 GB (1176.9 MiB)": the unit the executor's errors and budget lines use.
std::string gib(uint64_t bytes);

std::optional<TunedChoice> runnablePoint(const TunedChooser& chooser, const Family& fam, const OpInstance& inst,
                                         const std::string& variant, const ChoiceRefusal& whyNot,
                                         std::string& refused);

}  // namespace executor_detail

// The planner's records: activations (views folded into their base), then streamed
// weights (alive from the op before their first reader, so the upload overlaps that
// op), then every op's scratch regions (alive for that op alone) when planned.
struct GraphExecutor::Layout {
  struct Owner {
    enum class Kind { Tensor, Scratch } kind;
    int id;      // graph tensor, or node
    int region;  // scratch region of the node
  };
  std::vector<TensorUsage> records;
  std::vector<Owner> owners;
};

}  // namespace sdspeed
