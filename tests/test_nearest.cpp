// The tuning database's nearest-instance fallback (tuning/nearest.h): which entries an
// untuned instance may borrow parameters from, and a leave-one-out replay on recorded
// sweeps showing that the nearest entry's parameters beat the device vote's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "kernels/registry.h"
#include "tuning/database.h"
#include "tuning/nearest.h"
#include "tuning/sweep_cache.h"

using namespace sdspeed;

namespace {

OpInstance gemm(const std::string& shape, int n, const std::string& epilogue = "none",
                const std::string& format = "f32.buffer.nc4hw4") {
  return OpInstance::parse("gemm " + shape + " bias=1 epilogue=" + epilogue + " n=" + std::to_string(n) +
                           " residual=0 " + format);
}

OpInstance conv(const std::string& shape, int cout, int k) {
  return OpInstance::parse("conv " + shape + " bias=1 cout=" + std::to_string(cout) + " k=" + std::to_string(k) +
                           " pad=" + std::to_string(k / 2) + " residual=0 stride=1 temb=0 f32.buffer.nc4hw4");
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST(NearestDistance, SizesCountStructureMustMatch) {
  // Shape and the size attribute both count: 2x in C plus 1920 -> 2560 in n.
  auto d = instanceDistance(gemm("2x640x1x1024", 1920), gemm("2x1280x1x1024", 2560));
  ASSERT_TRUE(d);
  EXPECT_NEAR(*d, 1 + std::log2(2560.0 / 1920.0), 1e-12);
  EXPECT_EQ(instanceDistance(gemm("2x640x1x1024", 1920), gemm("2x640x1x1024", 1920)), 0.0);
  // Symmetric.
  EXPECT_EQ(*instanceDistance(gemm("2x640x1x1024", 1920), gemm("2x320x1x4096", 2560)),
            *instanceDistance(gemm("2x320x1x4096", 2560), gemm("2x640x1x1024", 1920)));
  // Structural attributes, families and formats are never crossed.
  EXPECT_FALSE(instanceDistance(gemm("2x640x1x1024", 1920), gemm("2x640x1x1024", 1920, "geglu")));
  EXPECT_FALSE(instanceDistance(gemm("2x640x1x1024", 1920), gemm("2x640x1x1024", 1920, "none", "f16.buffer.nc4hw4")));
  EXPECT_FALSE(
      instanceDistance(gemm("2x640x1x1024", 1920), gemm("2x640x1x1024", 1920, "none", "f32.buffer.nc4hw4.wf16")));
  EXPECT_FALSE(instanceDistance(gemm("2x640x1x1024", 1920), conv("2x640x1x1024", 1920, 1)));
  EXPECT_FALSE(instanceDistance(conv("2x320x64x64", 320, 3), conv("2x320x64x64", 320, 1)));  // k
  ASSERT_TRUE(instanceDistance(conv("2x320x64x64", 320, 3), conv("2x320x64x64", 640, 3)));  // cout: a size
  EXPECT_DOUBLE_EQ(*instanceDistance(conv("2x320x64x64", 320, 3), conv("2x320x64x64", 640, 3)), 1.0);
  // groupnorm: eps changes no work (ignored), g shapes the reduction (must be equal).
  const auto gn = [](const std::string& attrs) {
    return OpInstance::parse("groupnorm 2x320x64x64 " + attrs + " residual=0 silu=1 f32.buffer.nchw");
  };
  EXPECT_EQ(instanceDistance(gn("eps=1e-05 g=32"), gn("eps=1e-06 g=32")), 0.0);
  EXPECT_FALSE(instanceDistance(gn("eps=1e-05 g=32"), gn("eps=1e-05 g=16")));
  // attention: kv and heads are sizes, causal is not.
  const auto attn = [](int heads, int kv, int causal) {
    return OpInstance::parse("attention 2x640x1x1024 causal=" + std::to_string(causal) + " heads=" +
                             std::to_string(heads) + " kv=" + std::to_string(kv) + " mask=0 f16.buffer.nc4hw4");
  };
  EXPECT_DOUBLE_EQ(*instanceDistance(attn(8, 1024, 0), attn(16, 256, 0)), 3.0);
  EXPECT_FALSE(instanceDistance(attn(8, 1024, 0), attn(8, 1024, 1)));
}

// The H200 case of the issue: a GEMM of another n takes the nearest GEMM's parameters,
// not the vote of the others, and never a conv's or another epilogue's.
TEST(NearestLookup, GemmOfAnotherNTakesTheNearestGemm) {
  const Family& fam = findFamily("gemm");
  TuningDatabase db;
  db.record(gemm("2x640x1x1024", 2560), "tiled", "KWG=32,MWG=64,MWI=4,NWG=64,NWI=4,PF=0,SB=1,VEC=4", 100, 90);
  db.record(gemm("2x640x1x1024", 1920, "geglu"), "tiled", "KWG=16,MWG=32,MWI=2,NWG=32,NWI=2,PF=0,SB=0,VEC=4", 50, 40);
  // Two far-away GEMMs that outvote the near one.
  for (int n : {40, 20})
    db.record(gemm("2x5120x1x64", n), "tiled", "KWG=16,MWG=32,MWI=4,NWG=32,NWI=4,PF=0,SB=0,VEC=2", 10, 9);
  db.record(conv("2x640x1x1024", 1920, 1), "direct", "CB=4,CO=4,PX=2,WGX=16,WGY=4", 30, 20);

  TunedChoice c = db.lookup(fam, gemm("2x640x1x1024", 1920));
  EXPECT_TRUE(startsWith(c.source, "nearest gemm 2x640x1x1024 bias=1 epilogue=none n=2560")) << c.source;
  EXPECT_EQ(c.params, "KWG=32,MWG=64,MWI=4,NWG=64,NWI=4,PF=0,SB=1,VEC=4");
  EXPECT_NE(c.source.find("(distance 0.415"), std::string::npos) << c.source;  // log2(2560/1920)
  // The vote, asked alone, is the two far GEMMs' point.
  auto vote = db.deviceDefault(gemm("2x640x1x1024", 1920));
  ASSERT_TRUE(vote);
  EXPECT_EQ(vote->params, "KWG=16,MWG=32,MWI=4,NWG=32,NWI=4,PF=0,SB=0,VEC=2");
  // Beyond kMaxNearestDistance: the vote. 1x320x1x64 n=640 is 1 + 1 + 4 + 2 = 8 from
  // 2x640x1x1024 n=2560 (the limit, still nearest; the far GEMMs are 9 and 10 away);
  // half its W is 9 from it and 10 from 2x5120x1x64 n=40.
  c = db.lookup(fam, gemm("1x320x1x64", 640));
  EXPECT_TRUE(startsWith(c.source, "nearest gemm 2x640x1x1024 bias=1 epilogue=none n=2560")) << c.source;
  c = db.lookup(fam, gemm("1x320x1x32", 640));
  EXPECT_EQ(c.source, "device default");
  EXPECT_EQ(c.params, vote->params);
  c = db.lookup(fam, gemm("2x640x1x1024", 1920, "gelu"));  // no gelu entry at all
  EXPECT_EQ(c.source, "device default");
  TuningDatabase far;
  far.record(gemm("2x640x1x1024", 2560), "tiled", "KWG=32,MWG=64,MWI=4,NWG=64,NWI=4,PF=0,SB=1,VEC=4", 100, 90);
  c = far.lookup(fam, gemm("1x320x1x16", 320));  // 1 + 1 + 6 + 3 = 11
  EXPECT_EQ(c.source, "device default");
  // An entry with identical attributes answers at any distance (the rule before).
  far.record(gemm("2x640x1x1024", 320), "tiled", "KWG=16,MWG=32,MWI=2,NWG=32,NWI=2,PF=0,SB=0,VEC=4", 10, 9);
  c = far.lookup(fam, gemm("1x320x1x8", 320));  // 1 + 1 + 7 = 9
  EXPECT_EQ(c.source, "nearest " + gemm("2x640x1x1024", 320).text() + " (distance 9)");
  // A variant asked for: only entries that have it (none has direct here).
  c = db.lookup(fam, gemm("2x640x1x1024", 1920), "direct");
  EXPECT_EQ(c.source, "generic default");
  EXPECT_EQ(c.variant, "direct");
}

TEST(NearestLookup, TiesGoToTheSmallerInstanceWhateverTheEntryOrder) {
  const Family& fam = findFamily("gemm");
  const OpInstance a = gemm("2x640x1x1024", 1280), b = gemm("2x640x1x1024", 5120);  // both 1 from n=2560
  for (bool aFirst : {true, false}) {
    TuningDatabase db;
    for (int i = 0; i < 2; ++i) {
      const bool isA = (i == 0) == aFirst;
      db.record(isA ? a : b, "tiled", isA ? "KWG=16,MWG=32,MWI=2,NWG=32,NWI=2,PF=0,SB=0,VEC=4"
                                         : "KWG=32,MWG=64,MWI=4,NWG=64,NWI=4,PF=0,SB=1,VEC=4",
                10, 9);
    }
    const TunedChoice c = db.lookup(fam, gemm("2x640x1x1024", 2560));
    EXPECT_EQ(c.source, "nearest " + a.text() + " (distance 1)") << aFirst;  // "n=1280" < "n=5120"
  }
}

// Leave-one-out over recorded sweeps of several instances each
// (tests/data/sweeps/leave-one-out/<device-key>/<family>.csv, filtered copies of
// results/sweeps/: see the README there). For each instance I with at least 3 recorded
// points, the database is built from every other instance's ok rows (as `sdspeed tune`
// records them, but across kernel source hashes: the recordings span a few kernel
// revisions), the lookup's nearest step and the device vote each choose a (variant,
// params), and each choice is timed by I's own recording of that point (skipped when
// I lacks it). The rule it replaced, the nearest shape among identical attributes, is
// timed too. An instance counts when all three choices were recorded for it. Most
// evaluated instances are GroupNorms (identical attributes already, so the rules agree);
// the gains are the few with a size attribute (attention kv, GEMM n) or an eps apart.
TEST(Replay, NearestInstanceBeatsTheDeviceVoteLeaveOneOut) {
  const std::filesystem::path root = std::string(SDSPEED_TEST_DATA) + "/sweeps/leave-one-out";
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::recursive_directory_iterator(root))
    if (f.path().extension() == ".csv") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 4u);
  double logNearest = 0, logVote = 0, logSame = 0;
  int evaluated = 0, fromNearest = 0, sameChoice = 0;
  for (const auto& path : files) {
    const SweepCache rec(path.string(), {}, /*readOnly=*/true);
    // instance text -> (variant, params) -> fastest recorded median
    std::map<std::string, std::map<std::pair<std::string, std::string>, double>> times;
    for (const auto& r : rec.rows()) {
      if (r.status != Status::Ok) continue;
      auto [it, fresh] = times[r.instance].emplace(std::make_pair(r.variant, r.params), r.medianUs);
      if (!fresh) it->second = std::min(it->second, r.medianUs);
    }
    for (const auto& [text, own] : times) {
      if (own.size() < 3) continue;
      const OpInstance inst = OpInstance::parse(text);
      const Family& fam = findFamily(inst.family);
      TuningDatabase db;
      for (const auto& r : rec.rows())
        if (r.instance != text && r.status == Status::Ok)
          db.record(OpInstance::parse(r.instance), r.variant, r.params, r.medianUs, r.minUs);
      const TunedChoice c = db.lookup(fam, inst);
      const auto vote = db.deviceDefault(inst);
      if (!vote) continue;
      // The lookup before the nearest step crossed attributes (main at 46170e5): the
      // nearest shape among entries with identical attributes and format, any distance
      // (ties to the first entry), else the vote.
      std::pair<std::string, std::string> same{vote->variant, vote->params};
      double sameBest = INFINITY;
      for (const auto& e : db.entries())
        if (e.instance.sameOpAs(inst) && shapeDistance(e.instance.shape, inst.shape) < sameBest) {
          sameBest = shapeDistance(e.instance.shape, inst.shape);
          same = {e.best, e.variants.at(e.best).params};
        }
      const auto n = own.find({c.variant, c.params}), v = own.find({vote->variant, vote->params}), o = own.find(same);
      if (n == own.end() || v == own.end() || o == own.end()) continue;
      double best = INFINITY;
      for (const auto& [point, t] : own) best = std::min(best, t);
      logNearest += std::log(n->second / best);
      logVote += std::log(v->second / best);
      logSame += std::log(o->second / best);
      ++evaluated;
      fromNearest += startsWith(c.source, "nearest");
      sameChoice += n == v;
      std::cout << std::filesystem::relative(path, root).string() << ": " << text << ": nearest "
                << n->second / best << "x (" << c.source << "), vote " << v->second / best
                << "x, identical-attribute nearest " << o->second / best << "x\n";
    }
  }
  ASSERT_GT(evaluated, 0);
  const double gNearest = std::exp(logNearest / evaluated), gVote = std::exp(logVote / evaluated),
               gSame = std::exp(logSame / evaluated);
  std::cout << evaluated << " instances (" << fromNearest << " answered by a nearest entry, " << sameChoice
            << " with the vote's choice): geometric mean of chosen / best time: nearest " << gNearest << ", vote "
            << gVote << ", identical-attribute nearest then vote " << gSame << "\n";
  EXPECT_GE(fromNearest, evaluated / 2);  // the nearest step is what is measured, not the fallback
  EXPECT_LE(gNearest, gVote);
  EXPECT_LE(gNearest, gSame);
}
