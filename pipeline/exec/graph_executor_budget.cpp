// GraphExecutor's memory budget (graph_executor.h, ExecOptions::memoryBudget): the
// footprint of the current choices, the steps that shrink it (derived weights per call,
// streamed weights, least-scratch variants) and the check against what the device has
// free. The executor's constructor calls them (graph_executor.cpp).
#include <algorithm>
#include <string>
#include <vector>

#include "pipeline/exec/graph_executor.h"
#include "pipeline/exec/graph_executor_internal.h"
#include "kernels/lowering.h"
#include "kernels/registry.h"
#include "runtime/host_memory.h"

namespace sdspeed {

using namespace executor_detail;

// Everything the component will hold on the device with the current choices: resident
// weights, resident derived weights, the arena (or each tensor's own buffer), scratch the
// ops keep themselves, host inputs and placeholders.
uint64_t GraphExecutor::footprint() const {
  uint64_t total = memory_.otherBytes;
  const auto& ts = graph_.tensors();
  for (size_t id = 0; id < ts.size(); ++id)
    if (ts[id].kind == GraphTensor::Kind::Weight && !streamed_[id])
      total += TensorDesc{ts[id].shape, weightFormat_[id]}.bytes();
  total += kWeightStreamSlots * ringSlotBytes();
  uint64_t ownScratch = 0;
  for (const auto& op : ops_) {
    if (!op->derivedWeightsPerCall()) total += op->derivedWeightBytes();
    ownScratch += op->scratchBytes();
  }
  const Layout l = layout();
  if (opt_.planner == "none") {
    for (const auto& r : l.records) total += r.bytes;
    return total + ownScratch;
  }
  const MemoryPlan plan = planMemory(l.records, parsePlanStrategy(opt_.planner), be_.subBufferAlignment());
  total += plan.arenaOffsets().back();
  return opt_.planScratch ? total : total + ownScratch;
}

// The budget's second step: ops whose variant needs much scratch (naive attention's
// score matrix, im2col's columns) switch to the runnable variant of their family with
// the least scratch (its tuned point, else its defaults), the most scratch-hungry
// first, until the footprint fits; the new variant's result is within its family's
// tolerance, not bit-identical. Times are not weighed: the database rarely times
// every variant of an instance, and each switch is listed in the report.
void GraphExecutor::lessScratch(const TunedChooser& chooser, bool convolutions) {
  std::vector<size_t> order;
  // Convolutions that derive weights made their trade in the first step (their scratch
  // is what per-call transforms need); switching them to the direct kernel costs far
  // more time than any other saving, so they come last (convolutions = true), only
  // after streaming every weight was not enough.
  for (size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i]->scratchBytes() > 0 && (ops_[i]->derivedWeightBytes() > 0) == convolutions) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ops_[a]->scratchBytes() > ops_[b]->scratchBytes(); });
  int switched = 0;
  uint64_t saved = 0;
  for (size_t i : order) {
    const GraphNode& n = graph_.nodes()[i];
    const Family& fam = *n.family;
    const OpInstance inst = OpInstance::of(fam, *n.problem, nodeFormat_[i]);
    const uint64_t now = ops_[i]->scratchBytes();
    std::unique_ptr<PreparedOp> best;
    TunedChoice bestChoice;
    for (const auto& v : fam.variants()) {
      if (v.name == choices_[i].variant) continue;
      std::string ignored;
      const auto c = runnablePoint(chooser, fam, inst, v.name,
                                   [&](const TunedChoice& t) { return whyNotRunnable(fam, t, *n.problem, nodeFormat_[i], be_); }, ignored);
      if (!c) continue;
      auto op = prepareOp(be_, fam, v, v.parsePoint(c->params), *n.problem, nodeFormat_[i]);
      if (opt_.derivedWeightsPerCall || ops_[i]->derivedWeightsPerCall())
        if (op->derivedWeightBytes() > 0) op->setDerivedWeightsPerCall(true);
      const uint64_t bytes = op->scratchBytes() + (op->derivedWeightsPerCall() ? 0 : op->derivedWeightBytes());
      // A switch must save at least a thousandth of the budget: another variant costs
      // time, and KiB-sized savings (a GroupNorm's partials) never decide a fit.
      if (bytes + opt_.memoryBudget / 1000 < now && (!best || bytes < best->scratchBytes())) {
        best = std::move(op);
        bestChoice = *c;
      }
    }
    if (!best) continue;
    saved += now - best->scratchBytes();
    ++switched;
    choices_[i].variant = bestChoice.variant;
    choices_[i].params = bestChoice.params;
    choices_[i].source = bestChoice.source + "; budget: least-scratch variant";
    ops_[i] = std::move(best);
    if (footprint() <= opt_.memoryBudget) break;
  }
  if (switched)
    memory_.budgetChoices.push_back(std::to_string(switched) + (convolutions ? " convolutions" : " ops") +
                                    " switched to their least-scratch variant (" +
                                    gib(saved) + " less scratch)");
}

// The cheapest savings first: derived weights made per call (a transform kernel per
// call; the largest first, so the fewest convolutions pay), then streamed weights (the
// largest first: the fewest uploads). Each step is a binary search over how many of
// the ordered candidates to switch, since a plan costs O(n^2).
void GraphExecutor::fitBudget(const TunedChooser& chooser) {
  const uint64_t budget = opt_.memoryBudget;
  memory_.budgetBytes = budget;
  memory_.estimatedBytes = footprint();
  if (!budget || memory_.estimatedBytes <= budget) return;
  const std::string what = graph_.component();
  auto searchSwitch = [&](size_t n, const std::function<void(size_t)>& apply) {
    // The fewest k in [1, n] whose footprint fits, else n.
    size_t lo = 1, hi = n;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      apply(mid);
      if (footprint() <= budget) hi = mid; else lo = mid + 1;
    }
    apply(lo);
    return lo;
  };
  std::vector<size_t> convs;
  for (size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i]->derivedWeightBytes() > 0 && !ops_[i]->derivedWeightsPerCall()) convs.push_back(i);
  std::stable_sort(convs.begin(), convs.end(),
                   [&](size_t a, size_t b) { return ops_[a]->derivedWeightBytes() > ops_[b]->derivedWeightBytes(); });
  if (!convs.empty()) {
    const size_t k = searchSwitch(convs.size(), [&](size_t k) {
      for (size_t j = 0; j < convs.size(); ++j) ops_[convs[j]]->setDerivedWeightsPerCall(j < k);
    });
    uint64_t saved = 0;
    for (size_t j = 0; j < k; ++j) saved += ops_[convs[j]]->derivedWeightBytes();
    memory_.budgetChoices.push_back(std::to_string(k) + " of " + std::to_string(convs.size()) +
                                    " convolutions make their derived weights per call (" + gib(saved) + " not kept)");
  }
  memory_.estimatedBytes = footprint();
  if (memory_.estimatedBytes <= budget) return;
  lessScratch(chooser);
  memory_.estimatedBytes = footprint();
  if (memory_.estimatedBytes <= budget) return;
  if (!opt_.budgetMayStream)
    throw BudgetNeedsStreaming("--memory-budget " + gib(budget) + ": the " + what + " needs " + gib(memory_.estimatedBytes) +
                                   " without streaming weights",
                               memory_.estimatedBytes);
  if (opt_.planner == "none")
    throw Error("--memory-budget " + gib(budget) + ": the " + what + " needs " + gib(memory_.estimatedBytes) +
                " without a planner, and weights stream only into a planned arena (drop --planner none)");
  std::vector<size_t> weights;
  const auto& ts = graph_.tensors();
  for (size_t id = 0; id < ts.size(); ++id)
    if (ts[id].kind == GraphTensor::Kind::Weight) weights.push_back(id);
  std::stable_sort(weights.begin(), weights.end(),
                   [&](size_t a, size_t b) { return ts[a].shape.elements() > ts[b].shape.elements(); });
  auto streamFirst = [&](size_t k) {
    for (size_t j = 0; j < weights.size(); ++j) streamed_[weights[j]] = j < k;
  };
  size_t k = searchSwitch(weights.size(), streamFirst);
  memory_.estimatedBytes = footprint();
  if (memory_.estimatedBytes > budget) {
    // Last resort, where even streaming every weight does not fit: convolutions leave
    // Winograd / im2col for their least-scratch variant (the direct kernel: no
    // transformed planes; far slower), then the fewest weights stream again.
    streamFirst(weights.size());
    lessScratch(chooser, true);
    k = searchSwitch(weights.size(), streamFirst);
    memory_.estimatedBytes = footprint();
  }
  if (memory_.estimatedBytes > budget)
    throw Error("--memory-budget " + gib(budget) + " is below what the " + what + " can run in: at least " +
                gib(memory_.estimatedBytes) +
                " with every derived weight made per call, the least-scratch variants and every weight streamed");
  uint64_t streamed = 0;
  for (size_t j = 0; j < k; ++j) streamed += TensorDesc{ts[weights[j]].shape, weightFormat_[weights[j]]}.bytes();
  memory_.budgetChoices.push_back(std::to_string(k) + " of " + std::to_string(weights.size()) + " weights streamed (" +
                                  gib(streamed) + " uploaded per run)");
}

// The footprint fitBudget estimated (weights, the arena or every tensor's own buffer,
// scratch, derived weights) against what the device has free, before anything is
// allocated: too large a run is one Error here, not an allocation failure inside the
// driver (PoCL aborts when its malloc fails) or the OOM killer. A CPU device's buffers
// are host memory, so the host's available memory bounds it too.
void GraphExecutor::checkDeviceFits() const {
  const DeviceCaps& dev = be_.caps();
  const uint64_t live = be_.memoryStats().liveBytes;
  uint64_t free = dev.globalMemBytes > live ? dev.globalMemBytes - live : 0;
  std::string where = dev.name + " has " + gib(free) + " free of " + gib(dev.globalMemBytes) + " global memory";
  if (dev.isCpu()) {
    const HostMemory host = availableHostMemory();
    if (host.bytes && host.bytes < free) {
      free = host.bytes;
      where = "the host has " + gib(free) + " available for " + dev.name + "'s buffers (" + host.what + ")";
    }
  }
  const std::string planner = opt_.planner == "none" ? "--planner none (a buffer per tensor)" : "--planner " + opt_.planner;
  if (memory_.estimatedBytes > free)
    throw Error("the " + graph_.component() + " needs an estimated " + gib(memory_.estimatedBytes) +
                " of device memory with " + planner + (opt_.memoryBudget ? " and its --memory-budget" : "") + ", but " +
                where + ": lower -W/-H, give --memory-budget SIZE" + (opt_.planner == "none" ? " or a planner" : ""));
  // Weights (and with --planner none every tensor) are buffers of their own; a planned
  // arena's size is checked against maxAllocBytes where it is made.
  for (size_t id = 0; id < graph_.tensors().size(); ++id) {
    const GraphTensor& t = graph_.tensors()[id];
    if (t.kind == GraphTensor::Kind::HostInput || t.viewOf >= 0) continue;
    if (t.kind == GraphTensor::Kind::Activation && opt_.planner != "none") continue;
    const uint64_t bytes = TensorDesc{t.shape, t.kind == GraphTensor::Kind::Weight ? weightFormat_[id] : opt_.format}.bytes();
    if (bytes > dev.maxAllocBytes)
      throw Error("the " + graph_.component() + " tensor " + t.name + " " + t.shape.text() + " needs " + gib(bytes) +
                  ", more than " + dev.name + "'s largest allocation (" + gib(dev.maxAllocBytes) + "): lower -W/-H");
  }
}

}  // namespace sdspeed
