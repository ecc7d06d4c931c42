// The memory planner (runtime/memory_planner.h): every strategy's plan is valid on
// random graphs and a UNet-like graph, greedy-by-size is never worse than naive and
// stays within kBySizeFactor of the lower bound, small cases match known optima
// (an exhaustive search), and the validator catches overlapping plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "runtime/error.h"
#include "runtime/memory_planner.h"
#include "runtime/memory_planner_strategies.h"
#include "test_support.h"

using namespace sdspeed;
using sdspeed_test::errorMessage;

namespace {

// The stated bound: greedy-by-size needs at most this many times the lower bound (the
// most bytes alive at one op). It is not a theorem (the problem is NP-hard and a
// greedy packing can be made arbitrarily bad by hand); it is what holds with margin
// on the random graphs below, whose worst case is printed by RandomGraphs.
constexpr double kBySizeFactor = 1.5;

uint64_t sumBytes(const std::vector<TensorUsage>& records, uint64_t alignment = 1) {
  uint64_t s = 0;
  for (const auto& r : records) s += planner::alignUp(r.bytes, alignment);
  return s;
}

// A random op graph's records: op k writes tensor k (plus, sometimes, a second one);
// most tensors are read by the next few ops, some live long (skip connections,
// weights-like constants of the step); sizes span 256 B .. 64 MiB, log-uniform, or
// come from a small palette of repeated sizes (as the channels of one UNet level do).
std::vector<TensorUsage> randomGraph(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int n = std::uniform_int_distribution<int>(1, 300)(rng);
  const double longShare = std::uniform_real_distribution<double>(0.0, 0.3)(rng);
  std::uniform_real_distribution<double> logSize(8.0, 26.0);
  std::vector<uint64_t> palette(std::uniform_int_distribution<int>(1, 6)(rng));
  for (auto& p : palette) p = static_cast<uint64_t>(std::exp2(logSize(rng)));
  std::bernoulli_distribution fromPalette(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
  std::bernoulli_distribution isLong(longShare), twoOutputs(0.1);
  std::geometric_distribution<int> shortLife(0.5);
  std::vector<TensorUsage> records;
  int op = 0;
  while (static_cast<int>(records.size()) < n) {
    for (int k = twoOutputs(rng) ? 2 : 1; k > 0; --k) {
      TensorUsage r;
      r.bytes = fromPalette(rng) ? palette[rng() % palette.size()]
                                 : static_cast<uint64_t>(std::exp2(logSize(rng)));
      r.firstOp = op;
      r.lastOp = op + (isLong(rng) ? std::uniform_int_distribution<int>(1, n)(rng) : 1 + shortLife(rng));
      records.push_back(r);
    }
    ++op;
  }
  return records;
}

// The smallest arena for records (alignment 1) by exhaustive search: placing the
// tensors of an optimal packing in order of their offsets, each at the lowest offset
// where it fits, never puts one higher than in that packing, so the best over every
// order of this first-fit is optimal. n! orders: small n only.
uint64_t optimalArena(const std::vector<TensorUsage>& records) {
  std::vector<size_t> order(records.size());
  std::iota(order.begin(), order.end(), 0);
  uint64_t best = UINT64_MAX;
  do {
    std::vector<uint64_t> offset(records.size());
    std::vector<size_t> placed;
    uint64_t total = 0;
    for (size_t i : order) {
      // Candidates: 0 and the end of every placed tensor alive with i; take the lowest free one.
      std::vector<uint64_t> cands{0};
      for (size_t p : placed)
        if (!(records[p].lastOp < records[i].firstOp || records[i].lastOp < records[p].firstOp))
          cands.push_back(offset[p] + records[p].bytes);
      std::sort(cands.begin(), cands.end());
      for (uint64_t c : cands) {
        bool fits = true;
        for (size_t p : placed)
          if (!(records[p].lastOp < records[i].firstOp || records[i].lastOp < records[p].firstOp) &&
              offset[p] < c + records[i].bytes && c < offset[p] + records[p].bytes)
            fits = false;
        if (fits) {
          offset[i] = c;
          break;
        }
      }
      placed.push_back(i);
      total = std::max(total, offset[i] + records[i].bytes);
      if (total >= best) break;
    }
    best = std::min(best, total);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

uint64_t total(const std::vector<TensorUsage>& records, PlanStrategy s, uint64_t alignment = 1) {
  return planMemory(records, s, alignment).totalBytes();
}

}  // namespace

// ---- names, errors, the lower bound ----

TEST(MemoryPlanner, StrategyNamesRoundTrip) {
  ASSERT_EQ(allPlanStrategies().size(), 4u);
  for (PlanStrategy s : allPlanStrategies()) EXPECT_EQ(parsePlanStrategy(planStrategyName(s)), s);
  EXPECT_EQ(parsePlanStrategy("greedy-by-size"), PlanStrategy::GreedyBySize);
  std::vector<TensorUsage> records{{100, 0, 1}, {100, 1, 2}};
  EXPECT_EQ(planMemory(records, "equality").strategy, PlanStrategy::Equality);
}

TEST(MemoryPlanner, UnknownStrategyIsOneClearError) {
  EXPECT_EQ(errorMessage([] { parsePlanStrategy("greedy_by_size"); }),
            "unknown memory planner strategy 'greedy_by_size' (known: naive, equality, "
            "greedy-in-order, greedy-by-size)");
  EXPECT_NE(errorMessage([] { planMemory({{1, 0, 0}}, "best"); }).find("'best'"), std::string::npos);
  EXPECT_NE(errorMessage([] { parsePlanStrategy(""); }).find("unknown memory planner strategy ''"),
            std::string::npos);
}

TEST(MemoryPlanner, BadRecordsAndAlignmentAreErrors) {
  EXPECT_EQ(errorMessage([] { planMemory({{8, 0, 1}, {8, 3, 2}}, PlanStrategy::Naive); }),
            "memory planner: tensor 1 has lifetime [3, 2] (needs 0 <= firstOp <= lastOp)");
  EXPECT_NE(errorMessage([] { lowerBoundBytes({{8, -1, 2}}); }).find("tensor 0"), std::string::npos);
  EXPECT_EQ(errorMessage([] { planMemory({{8, 0, 1}}, PlanStrategy::GreedyBySize, 0); }),
            "memory planner: alignment must be at least 1 byte");
}

TEST(MemoryPlanner, LowerBound) {
  EXPECT_EQ(lowerBoundBytes({}), 0u);
  EXPECT_EQ(lowerBoundBytes({{7, 3, 3}}), 7u);
  // Lifetimes that only touch end to start are never alive together.
  EXPECT_EQ(lowerBoundBytes({{100, 0, 1}, {50, 2, 3}, {30, 4, 5}}), 100u);
  // Op 2: 100 + 50 + 30 alive.
  EXPECT_EQ(lowerBoundBytes({{100, 0, 2}, {50, 1, 3}, {30, 2, 2}, {500, 3, 3}}), 550u);
  EXPECT_EQ(lowerBoundBytes({{100, 0, 2}, {50, 1, 3}, {30, 2, 2}, {5, 3, 3}}), 180u);
}

TEST(MemoryPlanner, NoTensors) {
  for (PlanStrategy s : allPlanStrategies()) {
    MemoryPlan plan = planMemory({}, s, 256);
    EXPECT_EQ(plan.totalBytes(), 0u);
    EXPECT_TRUE(plan.bufferBytes.empty()) << planStrategyName(s);
    EXPECT_EQ(planProblem({}, plan), "");
  }
}

// ---- hand-made cases with known optimal answers ----

// A chain of equal tensors (each read only by the next op): two buffers suffice.
TEST(MemoryPlanner, ChainNeedsTwoTensors) {
  std::vector<TensorUsage> chain;
  for (int i = 0; i < 10; ++i) chain.push_back({1000, i, i + 1});
  EXPECT_EQ(lowerBoundBytes(chain), 2000u);
  EXPECT_EQ(total(chain, PlanStrategy::Naive), 10000u);
  for (PlanStrategy s : {PlanStrategy::Equality, PlanStrategy::GreedyInOrder, PlanStrategy::GreedyBySize})
    EXPECT_EQ(total(chain, s), 2000u) << planStrategyName(s);
  EXPECT_EQ(planMemory(chain, PlanStrategy::Equality).bufferBytes.size(), 2u);
}

// In order, the small tensor 1 takes the big free buffer of tensor 0, so tensor 2
// needs a second big one (200); equality and greedy-by-size keep the big buffer for
// tensor 2 and reach the optimum 110 = the lower bound.
TEST(MemoryPlanner, InOrderGrowsWhereBySizeDoesNot) {
  std::vector<TensorUsage> r{{100, 0, 0}, {10, 1, 2}, {100, 2, 2}};
  EXPECT_EQ(lowerBoundBytes(r), 110u);
  EXPECT_EQ(optimalArena(r), 110u);
  EXPECT_EQ(total(r, PlanStrategy::Naive), 210u);
  EXPECT_EQ(total(r, PlanStrategy::Equality), 110u);
  EXPECT_EQ(total(r, PlanStrategy::GreedyInOrder), 200u);
  MemoryPlan bySize = planMemory(r, PlanStrategy::GreedyBySize);
  EXPECT_EQ(bySize.totalBytes(), 110u);
  EXPECT_EQ(bySize.placements[0].offset, 0u);
  EXPECT_EQ(bySize.placements[2].offset, 0u);
  EXPECT_EQ(bySize.placements[1].offset, 100u);
}

// Sizes that all differ: equality shares nothing; greedy-in-order grows buffers.
TEST(MemoryPlanner, EqualityNeedsEqualSizes) {
  std::vector<TensorUsage> r{{100, 0, 1}, {60, 1, 2}, {90, 2, 3}, {50, 3, 4}};
  EXPECT_EQ(lowerBoundBytes(r), 160u);
  EXPECT_EQ(total(r, PlanStrategy::Equality), 300u);
  EXPECT_EQ(total(r, PlanStrategy::GreedyInOrder), 160u);  // {100, 90} and {60, 50}
  EXPECT_EQ(total(r, PlanStrategy::GreedyBySize), 160u);
  EXPECT_EQ(optimalArena(r), 160u);
}

// With all sizes equal, equality (interval colouring in order of start) uses exactly
// as many buffers as tensors are alive at the busiest op: the lower bound.
TEST(MemoryPlanner, EqualityWithEqualSizesReachesTheLowerBound) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    std::vector<TensorUsage> r = randomGraph(seed);
    for (auto& t : r) t.bytes = 4096;
    MemoryPlan plan = planMemory(r, PlanStrategy::Equality);
    ASSERT_EQ(planProblem(r, plan), "");
    EXPECT_EQ(plan.totalBytes(), lowerBoundBytes(r)) << "seed " << seed;
    EXPECT_EQ(plan.bufferBytes.size() * 4096, lowerBoundBytes(r)) << "seed " << seed;
  }
}

// Greedy-by-size is a heuristic: the big tensor 2 goes first at 0, tensor 1 above it,
// then tensor 0 (alive alone at op 1) takes offset 0, the only slot that tensor 3
// (alive with both) could have used; tensor 3 ends up on top. The optimum (tensor 2
// and tensor 3 at 0, tensor 1 at 12, tensor 0 at 10) is the lower bound.
TEST(MemoryPlanner, GreedyBySizeIsNotAlwaysOptimal) {
  std::vector<TensorUsage> r{{11, 1, 1}, {11, 3, 6}, {12, 4, 6}, {10, 1, 3}};
  EXPECT_EQ(lowerBoundBytes(r), 23u);
  EXPECT_EQ(optimalArena(r), 23u);
  MemoryPlan bySize = planMemory(r, PlanStrategy::GreedyBySize);
  EXPECT_EQ(bySize.totalBytes(), 33u);
  EXPECT_EQ(bySize.placements[0].offset, 0u);
  EXPECT_EQ(bySize.placements[3].offset, 23u);
  MemoryPlan optimum = bySize;
  optimum.bufferBytes = {23};
  optimum.placements = {{0, 10}, {0, 12}, {0, 0}, {0, 0}};
  EXPECT_EQ(planProblem(r, optimum), "");
}

// Greedy-by-size against the exhaustive optimum on small random graphs.
TEST(MemoryPlanner, GreedyBySizeNearTheOptimumOnSmallGraphs) {
  double worst = 1.0;
  int optimal = 0, cases = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = std::uniform_int_distribution<int>(2, 7)(rng);
    std::vector<TensorUsage> r;
    for (int i = 0; i < n; ++i) {
      const int first = std::uniform_int_distribution<int>(0, 5)(rng);
      r.push_back({std::uniform_int_distribution<uint64_t>(1, 16)(rng), first,
                   first + std::uniform_int_distribution<int>(0, 3)(rng)});
    }
    const uint64_t opt = optimalArena(r), lb = lowerBoundBytes(r);
    const uint64_t bySize = total(r, PlanStrategy::GreedyBySize);
    ASSERT_GE(opt, lb) << "seed " << seed;
    ASSERT_GE(bySize, opt) << "seed " << seed;  // the search is a true optimum
    worst = std::max(worst, static_cast<double>(bySize) / opt);
    optimal += bySize == opt;
    ++cases;
  }
  std::printf("greedy-by-size optimal in %d of %d small graphs, worst %.3fx the optimum\n", optimal,
              cases, worst);
  EXPECT_LE(worst, kBySizeFactor);
}

// ---- the validator can fail ----

TEST(MemoryPlanner, ValidatorCatchesOverlaps) {
  std::vector<TensorUsage> r{{100, 0, 2}, {100, 1, 3}, {100, 3, 4}};
  MemoryPlan plan;
  plan.strategy = PlanStrategy::GreedyBySize;
  plan.bufferBytes = {200};
  plan.placements = {{0, 0}, {0, 100}, {0, 0}};
  EXPECT_EQ(planProblem(r, plan), "");  // 2 reuses 0's bytes after 0 died

  plan.placements[1].offset = 50;  // 0 and 1 alive together at ops 1..2
  EXPECT_EQ(planProblem(r, plan),
            "tensor 0 (100 B, ops 0..2, buffer 0 bytes [0, 100)) and tensor 1 (100 B, ops 1..3, buffer 0 "
            "bytes [50, 150)) are alive together at op 1 and overlap");
  EXPECT_EQ(errorMessage([&] { validatePlan(r, plan); }),
            "memory plan (greedy-by-size): " + planProblem(r, plan));

  plan.placements[1].offset = 100;
  plan.placements[2].offset = 60;  // 1 and 2 share op 3
  EXPECT_NE(planProblem(r, plan).find("tensor 2"), std::string::npos);

  // Shared objects: two live tensors in one buffer.
  MemoryPlan shared;
  shared.bufferBytes = {100, 100};
  shared.placements = {{0, 0}, {1, 0}, {0, 0}};
  EXPECT_EQ(planProblem(r, shared), "");
  shared.placements[2] = {1, 0};
  EXPECT_NE(planProblem(r, shared).find("are alive together at op 3 and overlap"), std::string::npos);
}

TEST(MemoryPlanner, ValidatorCatchesBadPlacements) {
  std::vector<TensorUsage> r{{100, 0, 1}, {100, 1, 2}};
  MemoryPlan plan;
  plan.alignment = 64;
  plan.bufferBytes = {256};
  plan.placements = {{0, 0}, {0, 128}};
  EXPECT_EQ(planProblem(r, plan), "");
  plan.placements[1].offset = 100;
  EXPECT_NE(planProblem(r, plan).find("not aligned to 64"), std::string::npos);
  plan.placements[1].offset = 192;
  EXPECT_NE(planProblem(r, plan).find("ends past its buffer's 256 bytes"), std::string::npos);
  plan.placements[1] = {1, 0};
  EXPECT_NE(planProblem(r, plan).find("buffer that does not exist"), std::string::npos);
  plan.placements.pop_back();
  EXPECT_EQ(planProblem(r, plan), "1 placements for 2 tensors");
}

// Every real plan, broken by moving one tensor onto a tensor alive with it, is caught.
TEST(MemoryPlanner, ValidatorCatchesBrokenRealPlans) {
  int broken = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    std::vector<TensorUsage> r = randomGraph(seed);
    for (PlanStrategy s : allPlanStrategies()) {
      MemoryPlan plan = planMemory(r, s);
      for (size_t i = 0; i < r.size(); ++i)
        for (size_t j = i + 1; j < r.size(); ++j)
          if (!(r[i].lastOp < r[j].firstOp || r[j].lastOp < r[i].firstOp)) {
            MemoryPlan bad = plan;
            bad.placements[j] = bad.placements[i];
            bad.bufferBytes[bad.placements[j].buffer] =
                std::max(bad.bufferBytes[bad.placements[j].buffer], bad.placements[j].offset + r[j].bytes);
            EXPECT_NE(planProblem(r, bad), "") << planStrategyName(s) << " seed " << seed;
            ++broken;
            goto next;
          }
    next:;
    }
  }
  EXPECT_GT(broken, 150);
}

// ---- random graphs ----

// Seeds 1..400 every run (the factor is asserted on them) and 100 fresh ones (validity
// and <= naive; their worst ratio is printed, not asserted: a greedy heuristic has no
// guaranteed factor, and a rare fresh graph past it would make the test flaky).
TEST(MemoryPlanner, RandomGraphs) {
  const uint64_t fresh = sdspeed_test::testSeed();
  std::printf("fresh seeds from %llu (SDSPEED_TEST_SEED=%llu replays them)\n", (unsigned long long)fresh,
              (unsigned long long)fresh);
  struct Worst {
    double ratio = 0, sum = 0;
    uint64_t seed = 0;
    int graphs = 0;
  } fixed, fresh100;
  for (uint64_t k = 0; k < 500; ++k) {
    const bool isFixed = k < 400;
    const uint64_t seed = isFixed ? k + 1 : fresh + k;
    std::vector<TensorUsage> r = randomGraph(seed);
    const uint64_t lb = lowerBoundBytes(r);
    for (uint64_t alignment : {uint64_t{1}, uint64_t{256}}) {
      for (PlanStrategy s : allPlanStrategies()) {
        MemoryPlan plan = planMemory(r, s, alignment);
        ASSERT_EQ(planProblem(r, plan), "") << planStrategyName(s) << " seed " << seed << " alignment "
                                            << alignment;
        EXPECT_GE(plan.totalBytes(), lb) << planStrategyName(s) << " seed " << seed;
      }
      MemoryPlan smallest;  // TFLite's smallest-gap variant of greedy-by-size is valid too
      smallest.alignment = alignment;
      planner::greedyBySize(r, smallest, true);
      ASSERT_EQ(planProblem(r, smallest), "") << "smallest gap, seed " << seed;
      const MemoryPlan bySize = planMemory(r, PlanStrategy::GreedyBySize, alignment);
      for (const auto& p : bySize.placements) ASSERT_EQ(p.offset % alignment, 0u);
      // Never more than naive (with alignment: naive's tensors end to end, aligned).
      EXPECT_LE(bySize.totalBytes(), sumBytes(r, alignment)) << "seed " << seed;
      if (alignment == 1) {
        EXPECT_LE(bySize.totalBytes(), total(r, PlanStrategy::Naive)) << "seed " << seed;
        const double ratio = static_cast<double>(bySize.totalBytes()) / lb;
        if (isFixed) {
          EXPECT_LE(ratio, kBySizeFactor) << "seed " << seed << ": " << planSummary(bySize);
        }
        Worst& w = isFixed ? fixed : fresh100;
        w.sum += ratio;
        ++w.graphs;
        if (ratio > w.ratio) w.ratio = ratio, w.seed = seed;
      }
    }
  }
  for (const Worst* w : {&fixed, &fresh100})
    std::printf("greedy-by-size / lower bound over %d %s random graphs: mean %.3f, worst %.3f (seed %llu), "
                "stated bound %.2f\n",
                w->graphs, w == &fixed ? "fixed" : "fresh", w->sum / w->graphs, w->ratio,
                (unsigned long long)w->seed, kBySizeFactor);
}

// ---- alignment, arena offsets, summary ----

TEST(MemoryPlanner, AlignmentAndArenaOffsets) {
  std::vector<TensorUsage> r{{1000, 0, 1}, {10, 0, 1}, {300, 1, 2}, {700, 2, 2}};
  MemoryPlan bySize = planMemory(r, PlanStrategy::GreedyBySize, 256);
  EXPECT_EQ(planProblem(r, bySize), "");
  for (const auto& p : bySize.placements) EXPECT_EQ(p.offset % 256, 0u);
  EXPECT_EQ(bySize.placements[0].offset, 0u);
  EXPECT_EQ(bySize.placements[2].offset, 1024u);  // above 1000, aligned
  EXPECT_EQ(bySize.placements[1].offset, 1536u);  // above 300 at 1024, aligned
  MemoryPlan naive = planMemory(r, PlanStrategy::Naive, 256);
  EXPECT_EQ(naive.arenaOffsets(), (std::vector<uint64_t>{0, 1024, 1280, 1792, 2492}));
  EXPECT_EQ(bySize.arenaOffsets(), (std::vector<uint64_t>{0, bySize.totalBytes()}));
}

TEST(MemoryPlanner, Summary) {
  std::vector<TensorUsage> r{{100, 0, 0}, {10, 1, 2}, {100, 2, 2}};
  EXPECT_EQ(planSummary(planMemory(r, PlanStrategy::GreedyBySize)),
            "greedy-by-size: 3 tensors in 1 buffer, 110 B = 1.000x the lower bound 110 B, 0.524x naive "
            "210 B (alignment 1)");
  EXPECT_EQ(planSummary(planMemory(r, PlanStrategy::GreedyInOrder, 256)),
            "greedy-in-order: 3 tensors in 2 buffers, 200 B = 1.818x the lower bound 110 B, 0.952x naive "
            "210 B (alignment 256)");
}

// ---- a UNet-like graph ----

namespace {

// The records of a graph shaped like SD 1.x's UNet at 512x512 (latent 64x64, batch 2
// for classifier-free guidance, fp16): conv_in, four down levels (320@64, 640@32,
// 1280@16, 1280@8; two ResNet blocks each, a transformer after each ResNet in the
// first three, a strided conv between levels), the mid block, four up levels (three
// ResNet blocks each on the concat of the running tensor and a skip, transformers
// in the last three, nearest 2x upsample + conv between levels) and conv_out. Every
// output of a down block (and conv_in) is a skip held until its up block's concat:
// 12 of them. Attention is fused (no score matrix). Op k writes tensor k.
// skips = false: the same chain without the skip connections (no concats).
std::vector<TensorUsage> unetLike(bool skips) {
  std::vector<TensorUsage> rec;
  auto add = [&](uint64_t bytes, std::initializer_list<int> inputs) {
    const int op = static_cast<int>(rec.size());
    for (int t : inputs) rec[t].lastOp = op;
    rec.push_back({bytes, op, op});
    return op;
  };
  const uint64_t batch = 2, half = 2;
  auto act = [&](uint64_t c, uint64_t hw) { return batch * c * hw * hw * half; };
  const int latent = add(act(4, 64), {});
  const int temb = add(batch * 1280 * half, {});       // time embedding: read by every ResNet
  const int text = add(batch * 77 * 768 * half, {});   // text embedding: read by every cross-attention
  auto resnet = [&](int x, uint64_t cin, uint64_t c, uint64_t hw) {
    int h = add(act(cin, hw), {x});  // GroupNorm + SiLU
    h = add(act(c, hw), {h});        // conv 3x3
    h = add(act(c, hw), {h, temb});  // + time embedding
    h = add(act(c, hw), {h});        // GroupNorm + SiLU
    h = add(act(c, hw), {h});        // conv 3x3
    const int sc = cin == c ? x : add(act(c, hw), {x});  // 1x1 shortcut
    return add(act(c, hw), {h, sc});
  };
  auto transformer = [&](int x, uint64_t c, uint64_t hw) {
    const uint64_t ctx = batch * 77 * c * half;
    int h = add(act(c, hw), {x});   // GroupNorm
    h = add(act(c, hw), {h});       // proj_in
    int a = add(act(c, hw), {h});   // LayerNorm; self-attention
    int q = add(act(c, hw), {a}), k = add(act(c, hw), {a}), v = add(act(c, hw), {a});
    int o = add(act(c, hw), {q, k, v});
    o = add(act(c, hw), {o});
    h = add(act(c, hw), {h, o});
    a = add(act(c, hw), {h});       // LayerNorm; cross-attention
    q = add(act(c, hw), {a});
    k = add(ctx, {text});
    v = add(ctx, {text});
    o = add(act(c, hw), {q, k, v});
    o = add(act(c, hw), {o});
    h = add(act(c, hw), {h, o});
    a = add(act(c, hw), {h});       // LayerNorm; GEGLU feed-forward
    int g = add(act(8 * c, hw), {a});
    g = add(act(4 * c, hw), {g});
    o = add(act(c, hw), {g});
    h = add(act(c, hw), {h, o});
    h = add(act(c, hw), {h});       // proj_out
    return add(act(c, hw), {h, x});
  };
  const uint64_t chans[4] = {320, 640, 1280, 1280}, res[4] = {64, 32, 16, 8};
  int x = add(act(320, 64), {latent});  // conv_in
  std::vector<std::pair<int, uint64_t>> held{{x, 320}};
  uint64_t cin = 320;
  for (int l = 0; l < 4; ++l) {
    for (int j = 0; j < 2; ++j) {
      x = resnet(x, cin, chans[l], res[l]);
      if (l < 3) x = transformer(x, chans[l], res[l]);
      held.push_back({x, chans[l]});
      cin = chans[l];
    }
    if (l < 3) {
      x = add(act(chans[l], res[l] / 2), {x});  // strided conv
      held.push_back({x, chans[l]});
    }
  }
  x = resnet(x, 1280, 1280, 8);
  x = transformer(x, 1280, 8);
  x = resnet(x, 1280, 1280, 8);
  for (int l = 3; l >= 0; --l) {
    for (int j = 0; j < 3; ++j) {
      auto [skip, sc] = held.back();
      held.pop_back();
      uint64_t in = cin;
      if (skips) {
        x = add(act(cin + sc, res[l]), {x, skip});  // concat
        in = cin + sc;
      }
      x = resnet(x, in, chans[l], res[l]);
      if (l < 3) x = transformer(x, chans[l], res[l]);
      cin = chans[l];
    }
    if (l > 0) {
      x = add(act(cin, res[l] * 2), {x});  // nearest 2x
      x = add(act(cin, res[l] * 2), {x});  // conv
    }
  }
  x = add(act(320, 64), {x});  // GroupNorm + SiLU
  add(act(4, 64), {x});        // conv_out
  return rec;
}

double mib(uint64_t b) { return static_cast<double>(b) / (1 << 20); }

}  // namespace

TEST(MemoryPlanner, UNetLikeGraph) {
  uint64_t lbWith = 0, lbWithout = 0;
  for (bool skips : {true, false}) {
    std::vector<TensorUsage> r = unetLike(skips);
    const uint64_t lb = lowerBoundBytes(r);
    (skips ? lbWith : lbWithout) = lb;
    std::printf("UNet-like graph %s skip connections: %zu tensors\n", skips ? "with" : "without", r.size());
    for (PlanStrategy s : allPlanStrategies()) {
      MemoryPlan plan = planMemory(r, s, 256);
      ASSERT_EQ(planProblem(r, plan), "") << planStrategyName(s);
      std::printf("  %s\n", planSummary(plan).c_str());
    }
    MemoryPlan smallest;
    smallest.alignment = 256;
    planner::greedyBySize(r, smallest, true);
    ASSERT_EQ(planProblem(r, smallest), "");
    std::printf("  greedy-by-size with TFLite's smallest gap instead of the lowest: %.1f MiB\n",
                mib(smallest.totalBytes()));
    const MemoryPlan bySize = planMemory(r, PlanStrategy::GreedyBySize, 256);
    EXPECT_LE(bySize.totalBytes(), kBySizeFactor * lb);
    EXPECT_LE(bySize.totalBytes(), planMemory(r, PlanStrategy::GreedyInOrder).totalBytes());
    EXPECT_LT(bySize.totalBytes(), planMemory(r, PlanStrategy::Naive).totalBytes() / 5);
  }
  // The 12 skips are held across the whole bottom of the U: they raise the peak.
  EXPECT_GT(lbWith, lbWithout);
  std::printf("skip connections raise the lower bound from %.1f MiB to %.1f MiB (+%.1f MiB)\n", mib(lbWithout),
              mib(lbWith), mib(lbWith - lbWithout));
}
