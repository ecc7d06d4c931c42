// The elementwise helper families (kernels/common/elementwise.h) beyond what the
// harness covers: problems from the command line (canonical attributes that round-trip,
// one clear Error per bad attribute) and the embedding's host check of token ids.
#include <gtest/gtest.h>

#include "test_support.h"  // first: a private PoCL cache folder for this process

#include "kernels/embedding/embedding_family.h"
#include "kernels/registry.h"
#include "tuning/check.h"

namespace sdspeed {
namespace {

using sdspeed_test::errorMessage;

std::string makeError(const std::string& op, const std::string& shape, std::map<std::string, std::string> attrs) {
  return errorMessage([&] { findFamily(op).makeProblem(parseShape(shape), attrs); });
}

TEST(ElementwiseProblems, CanonicalAttributesRoundTrip) {
  for (const char* op : {"binary", "upsample", "concat", "reshape", "embedding", "timestep"}) {
    const Family& fam = findFamily(op);
    for (const auto& p : fam.checkProblems(true)) {
      auto back = fam.makeProblem(p->shape(), p->attributes());
      EXPECT_EQ(back->text(), p->text());
      EXPECT_EQ(fam.shapes(*back), fam.shapes(*p)) << p->text();
    }
  }
  // Defaults: add without broadcast, scale 2, c2 = C, h = 1, CLIP sizes, SD 1.5's timestep.
  EXPECT_EQ(findFamily("binary").makeProblem(parseShape("2x3x4x5"), {})->text(), "binary 2x3x4x5 broadcast=0 fn=add");
  EXPECT_EQ(findFamily("upsample").shapes(*findFamily("upsample").makeProblem(parseShape("1x3x4x5"), {}))[1],
            parseShape("1x3x8x10"));
  EXPECT_EQ(findFamily("concat").shapes(*findFamily("concat").makeProblem(parseShape("1x3x4x5"), {}))[2],
            parseShape("1x6x4x5"));
  EXPECT_EQ(findFamily("reshape").shapes(*findFamily("reshape").makeProblem(parseShape("2x320x64x64"), {}))[1],
            parseShape("2x320x1x4096"));
  EXPECT_EQ(findFamily("embedding").makeProblem(parseShape("2x768x1x77"), {})->text(),
            "embedding 2x768x1x77 positions=77 vocab=49408");
  EXPECT_EQ(findFamily("timestep").makeProblem(parseShape("2x320x1x1"), {})->text(),
            "timestep 2x320x1x1 flip_sin_to_cos=1 freq_shift=0");
}

TEST(ElementwiseProblems, BadAttributesAreOneClearError) {
  EXPECT_NE(makeError("binary", "1x4x2x2", {{"fn", "sub"}}).find("fn=sub"), std::string::npos);
  EXPECT_NE(makeError("binary", "1x4x2x2", {{"broadcast", "2"}}).find("broadcast=2"), std::string::npos);
  EXPECT_NE(makeError("binary", "1x4x2x2", {{"bshape", "1"}}).find("unknown binary attribute 'bshape'"),
            std::string::npos);
  EXPECT_NE(makeError("upsample", "1x4x2x2", {{"scale", "0"}}).find("scale=0"), std::string::npos);
  EXPECT_NE(makeError("upsample", "1x4x2x2", {{"scale", "2x"}}).find("scale=2x"), std::string::npos);
  EXPECT_NE(makeError("concat", "1x4x2x2", {{"c2", "0"}}).find("c2=0"), std::string::npos);
  EXPECT_NE(makeError("reshape", "1x4x3x5", {{"h", "2"}}).find("does not divide"), std::string::npos);
  EXPECT_NE(makeError("embedding", "1x8x1x9", {{"positions", "7"}}).find("positions=7"), std::string::npos);
  EXPECT_NE(makeError("embedding", "1x8x2x9", {}).find("token tensor"), std::string::npos);
  EXPECT_NE(makeError("embedding", "1x8x1x9", {{"vocab", "many"}}).find("vocab=many"), std::string::npos);
  EXPECT_NE(makeError("timestep", "2x8x1x1", {{"freq_shift", "4"}}).find("must be positive"), std::string::npos);
  EXPECT_NE(makeError("timestep", "2x8x1x1", {{"freq_shift", "x"}}).find("freq_shift=x"), std::string::npos);
  EXPECT_NE(makeError("timestep", "2x8x1x1", {{"flip_sin_to_cos", "yes"}}).find("flip_sin_to_cos=yes"),
            std::string::npos);
  EXPECT_NE(makeError("timestep", "2x8x3x1", {}).find("[B, dim, 1, 1]"), std::string::npos);
}

// An id outside [0, vocab) (or not an integer) is an Error before the gather runs;
// in-range ids run.
TEST(Embedding, OutOfRangeIdsAreRejectedOnTheHost) {
  static Context ctx(selectDevice(listDevices(), ""), ContextOptions{});
  EmbeddingFamily fam;
  const auto prob = fam.problem({2, 6, 1, 5}, 11, 7);
  const VariantDef& v = fam.variants().front();
  auto op = prepareOp(ctx, fam, v, v.defaults(), *prob, StorageFormat{});
  OpTensors t = OpTensors::create(ctx, fam, *prob, StorageFormat{}, false);
  std::mt19937_64 rng(3);
  auto in = fam.makeInputs(*prob, rng);
  for (float bad : {11.0f, -1.0f, 2.5f, 1e9f}) {
    auto ids = in;
    ids[0].data[7] = bad;
    t.upload(ids);
    const std::string msg = errorMessage([&] { op->enqueue(t.args()); });
    EXPECT_NE(msg.find("at index 7 is not an integer in [0, 11)"), std::string::npos) << msg;
  }
  t.upload(in);
  EXPECT_EQ(op->enqueue(t.args()).size(), 1u);
  ctx.finish();
}

TEST(Embedding, MinBytesCountsTheRowsReadNotTheWholeTable) {
  EmbeddingFamily fam;
  // ids 2*77, 154 token rows + 77 position rows of 768 floats, the f16 output.
  const size_t want = (154 + (154 + 77) * 768) * 4 + 2 * 768 * 77 * 2;
  EXPECT_EQ(fam.minBytes(*fam.problem({2, 768, 1, 77}, 49408, 77), StorageFormat::parse("f16.buffer.nchw")), want);
}

}  // namespace
}  // namespace sdspeed
