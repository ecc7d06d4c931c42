// The barriers a span-only run leaves out (DispatchSync::hazardsOnly,
// runtime/vulkan/dispatch.h): each binding's access as the SPIR-V declares it
// (spirv_access.h), and the recorder's barrier before a dispatch exactly where a range it
// binds meets a range bound since the last barrier with a write on either side. Lavapipe
// runs a command buffer's dispatches in order, so a missing barrier cannot show there as a
// wrong value: the barrier counts are what these tests check, and the values that each
// chain ends with stay checked too. On a GPU the device script's `barriers` stage compares
// the decoded images of runs with and without the elision.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <vector>

#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/device_info.h"
#include "runtime/vulkan/dispatch.h"
#include "runtime/vulkan/instance.h"
#include "runtime/vulkan/pipeline.h"
#include "runtime/vulkan/spirv.h"
#include "runtime/vulkan/spirv_access.h"
#include "vulkan_device_fixture.h"

SDSPEED_SPIRV_SHADER(barrier_axpb_f32)  // axpb.comp, under a name of its own
SDSPEED_SPIRV_SHADER(access_test)
SDSPEED_SPIRV_SHADER(access_blocks_test)

namespace sdspeed::vk {
namespace {

using A = BindingAccess;

TEST(SpirvAccess, ReadsEachBindingsAccessFromTheDecorations) {
  const SpirvShader& s = shaders::access_test;
  EXPECT_EQ(storageBindingAccess(s.words, s.wordCount, 6),
            (std::vector<A>{A::Read, A::Write, A::Write, A::Unused, A::Write, A::Unused}));
  const SpirvShader& blocks = shaders::access_blocks_test;
  EXPECT_EQ(storageBindingAccess(blocks.words, blocks.wordCount, 3), (std::vector<A>{A::Write, A::Write, A::Unused}));
  const SpirvShader& axpb = shaders::barrier_axpb_f32;  // readonly x, writeonly y
  EXPECT_EQ(storageBindingAccess(axpb.words, axpb.wordCount, 2), (std::vector<A>{A::Read, A::Write}));
}

TEST(SpirvAccess, AModuleItCannotReadWritesEveryBinding) {
  const std::vector<A> all(3, A::Write);
  EXPECT_EQ(storageBindingAccess(nullptr, 0, 3), all);
  const SpirvShader& s = shaders::access_test;
  std::vector<uint32_t> words(s.words, s.words + s.wordCount);
  words[0] = 0x12345678;  // not the SPIR-V magic
  EXPECT_EQ(storageBindingAccess(words.data(), words.size(), 3), all);
  words[0] = s.words[0];
  words[5] = 0;  // an instruction of zero words
  EXPECT_EQ(storageBindingAccess(words.data(), words.size(), 3), all);
  words.assign(s.words, s.words + s.wordCount);
  words[5] = (1000u << 16) | (words[5] & 0xffffu);  // running past the end
  EXPECT_EQ(storageBindingAccess(words.data(), words.size(), 3), all);
}

// The positions of every instruction of a module with opcode `op`.
std::vector<size_t> instructions(const std::vector<uint32_t>& words, uint32_t op) {
  std::vector<size_t> at;
  for (size_t i = 5; i < words.size() && (words[i] >> 16); i += words[i] >> 16)
    if ((words[i] & 0xffffu) == op) at.push_back(i);
  return at;
}

constexpr uint32_t kOpDecorate = 71, kOpMemberDecorate = 72, kOpGroupDecorate = 74;
constexpr uint32_t kNonWritable = 24, kBinding = 33, kDescriptorSet = 34, kOffset = 35;

// Decoration groups are not followed: a module with one makes every binding Write.
TEST(SpirvAccess, ADecorationGroupWritesEveryBinding) {
  const SpirvShader& s = shaders::access_test;
  std::vector<uint32_t> words(s.words, s.words + s.wordCount);
  // A decoration other than Binding and DescriptorSet: rewriting a Binding would also lose
  // a buffer's binding, which makes every binding Write by another rule.
  size_t at = 0;
  for (size_t i : instructions(words, kOpDecorate))
    if (words[i + 2] != kBinding && words[i + 2] != kDescriptorSet) at = i;
  ASSERT_NE(at, 0u);
  words[at] = (words[at] & 0xffff0000u) | kOpGroupDecorate;
  EXPECT_EQ(storageBindingAccess(words.data(), words.size(), 6), std::vector<A>(6, A::Write));
}

// access_blocks.comp's binding 0 has a read-only member 0 and a writable member 1. A
// NonWritable on member 5 (past the block's two: here its member 1's Offset decoration
// rewritten) does not make the block read only.
TEST(SpirvAccess, ANonWritableMemberPastTheBlockDoesNotCount) {
  const SpirvShader& s = shaders::access_blocks_test;
  std::vector<uint32_t> words(s.words, s.words + s.wordCount);
  std::set<uint32_t> withReadOnlyMember;
  for (size_t i : instructions(words, kOpMemberDecorate))
    if (words[i + 3] == kNonWritable) withReadOnlyMember.insert(words[i + 1]);
  bool changed = false;
  for (size_t i : instructions(words, kOpMemberDecorate))
    if (!changed && withReadOnlyMember.count(words[i + 1]) && words[i + 2] == 1 && words[i + 3] == kOffset) {
      words[i + 2] = 5;  // OpMemberDecorate %P 5 NonWritable (its fifth word, the offset, left as is)
      words[i + 3] = kNonWritable;
      changed = true;
    }
  ASSERT_TRUE(changed);
  EXPECT_EQ(storageBindingAccess(words.data(), words.size(), 2)[0], A::Write);
}

// A buffer variable whose Binding decoration the walk cannot find (here: turned into
// another decoration) makes every binding Write, not that binding Unused.
TEST(SpirvAccess, ABufferWithoutItsBindingWritesEveryBinding) {
  const SpirvShader& s = shaders::access_test;
  std::vector<uint32_t> words(s.words, s.words + s.wordCount);
  bool changed = false;
  for (size_t i : instructions(words, kOpDecorate))
    if (!changed && (words[i] >> 16) >= 4 && words[i + 2] == kBinding) {
      words[i + 2] = 0;  // RelaxedPrecision
      changed = true;
    }
  ASSERT_TRUE(changed);
  EXPECT_EQ(storageBindingAccess(words.data(), words.size(), 5), std::vector<A>(5, A::Write));
}

struct Push {  // axpb.comp's push constants
  uint32_t n;
  float a, b;
};

class VulkanBarrierTest : public VulkanDeviceTest {
 protected:
  void SetUp() override {
    VulkanDeviceTest::SetUp();
    if (IsSkipped()) return;
    pipeline_ = std::make_unique<ComputePipeline>(*device_, shaders::barrier_axpb_f32, 2, sizeof(Push),
                                                  std::vector<SpecConstant>{specU32(0, kWg)});
  }
  void TearDown() override {
    pipeline_.reset();
    VulkanDeviceTest::TearDown();
  }
  // y = a x + 1 over n floats: x bound at [xo, xo + 4n) of bx, y at [yo, yo + 4n) of by.
  void axpb(OpRecorder& rec, const Buffer& bx, uint64_t xo, const Buffer& by, uint64_t yo, float a) {
    const Push push{kN, a, 1.0f};
    rec.dispatch(*pipeline_, std::vector<BufferRange>{{&bx, xo, 4 * kN}, {&by, yo, 4 * kN}}, &push, sizeof push,
                 kN / kWg);
  }
  std::vector<float> read(const Buffer& b, uint64_t offset) {
    std::vector<float> all(b.bytes() / 4);
    download(*device_, b, all.data(), b.bytes());
    return {all.begin() + static_cast<long>(offset / 4), all.begin() + static_cast<long>(offset / 4 + kN)};
  }
  static constexpr uint32_t kN = 1024, kWg = 64;
  std::unique_ptr<ComputePipeline> pipeline_;
};

// Ranges A0..A3 of one arena-like buffer, and buffers x and z. After each dispatch: the
// barrier it was expected to get, and the ranges bound since the last barrier (S).
TEST_F(VulkanBarrierTest, HazardsOnlyPutsABarrierWhereAWrittenRangeIsShared) {
  const uint64_t R = 4 * kN;  // one range: the arena holds 4 of them
  Buffer arena(*device_, 4 * R), x(*device_, R), z(*device_, R);
  const std::vector<float> ones(kN, 1.0f);
  upload(*device_, x, ones.data(), R);
  OpRecorder rec(*device_);
  rec.setSync({true, false, false, true});
  rec.begin();
  int n = 0;
  auto expect = [&](bool barrier) {
    const uint64_t before = rec.barriersRecorded();
    return [&rec, before, barrier, k = ++n] { EXPECT_EQ(rec.barriersRecorded() - before, barrier ? 1u : 0u) << "dispatch " << k; };
  };
  auto step = [&](bool barrier, auto&& record) {
    auto check = expect(barrier);
    record();
    check();
  };
  step(true, [&] { axpb(rec, x, 0, arena, 0, 2.0f); });        // 1. a batch's first: A0 = 3; S {x r, A0 w}
  step(false, [&] { axpb(rec, x, 0, arena, R, 3.0f); });       // 2. A1 = 4; S + {x r, A1 w}
  step(true, [&] { axpb(rec, arena, 0, arena, 2 * R, 1.0f); });  // 3. reads A0 (written): A2 = 4; S {A0 r, A2 w}
  step(false, [&] { axpb(rec, x, 0, z, 0, 5.0f); });           // 4. z = 6; S + {x r, z w}
  step(false, [&] { axpb(rec, arena, R, arena, 3 * R, 2.0f); });  // 5. A1 written before the barrier: A3 = 9
  step(true, [&] { axpb(rec, z, 0, x, 0, 1.0f); });            // 6. reads z (written): x = 7; S {z r, x w}
  step(true, [&] { axpb(rec, arena, 2 * R, z, 0, 1.0f); });    // 7. writes z (read): z = 5; S {A2 r, z w}
  step(true, [&] { axpb(rec, arena, 3 * R, z, 0, 1.0f); });    // 8. writes z (written): z = 10; S {A3 r, z w}
  step(false, [&] { axpb(rec, arena, 3 * R, arena, R, 1.0f); });  // 9. A3 read twice: A1 = 10; S + {A3 r, A1 w}
  step(true, [&] { axpb(rec, x, 0, arena, 2 * R - 16, 1.0f); });  // 10. 16 bytes into A1 (written): 8
  step(false, [&] { axpb(rec, z, 0, arena, 3 * R - 16, 1.0f); });  // 11. starts where 10's write ends: 11
  rec.submit();
  EXPECT_EQ(rec.dispatchesRecorded(), 11u);
  EXPECT_EQ(rec.barriersRecorded(), 6u);
  EXPECT_EQ(read(x, 0)[5], 7.0f);
  EXPECT_EQ(read(z, 0)[5], 10.0f);
  EXPECT_EQ(read(arena, 0)[5], 3.0f);
  EXPECT_EQ(read(arena, R)[5], 10.0f);
  EXPECT_EQ(read(arena, 2 * R)[5], 8.0f);   // 10's range, element 9
  EXPECT_EQ(read(arena, 3 * R)[5], 11.0f);  // 11's range, element 9
}

// A binding of bytes 0 reaches its buffer's end, and an Unused binding (access.comp's 3)
// takes no part in the hazards.
TEST_F(VulkanBarrierTest, WholeBufferAndUnusedBindings) {
  const uint64_t R = 4 * kN;
  Buffer x(*device_, 2 * R), y(*device_, R), z(*device_, R), w(*device_, R), u(*device_, R), v(*device_, R);
  OpRecorder rec(*device_);
  rec.setSync({true, false, false, true});
  rec.begin();
  const Push push{kN, 1.0f, 1.0f};
  rec.dispatch(*pipeline_, std::vector<BufferRange>{{&x, 0, 0}, {&y, 0, 4 * kN}}, &push, sizeof push, kN / kWg);
  const uint64_t b1 = rec.barriersRecorded();
  axpb(rec, z, 0, x, R, 1.0f);  // writes the second half of x, which the whole-buffer binding read
  EXPECT_EQ(rec.barriersRecorded(), b1 + 1);
  axpb(rec, z, 0, u, 0, 1.0f);  // u written
  ComputePipeline access(*device_, shaders::access_test, 5, 0);
  ASSERT_EQ(access.access(3), A::Unused);
  const uint64_t b2 = rec.barriersRecorded();
  // Bindings 0 read, 1 and 2 written, 3 unused, 4 written: x's first half read, y and w
  // written, u unused, x's second half written (written since the barrier: a barrier).
  rec.dispatch(access, std::vector<BufferRange>{{&x, 0, R}, {&y, 0, R}, {&w, 0, R}, {&u, 0, R}, {&x, R, R}},
               nullptr, 0, 1);
  EXPECT_EQ(rec.barriersRecorded(), b2 + 1) << "binding 4 writes x's second half, written since the barrier";
  const uint64_t b3 = rec.barriersRecorded();
  rec.dispatch(access, std::vector<BufferRange>{{&z, 0, R}, {&w, 0, R}, {&y, 0, R}, {&u, 0, R}, {&v, 0, R}},
               nullptr, 0, 1);
  EXPECT_EQ(rec.barriersRecorded(), b3 + 1) << "w and y were written by the dispatch before";
  const uint64_t b4 = rec.barriersRecorded();
  axpb(rec, x, R, u, 0, 1.0f);  // u was bound only Unused since the barrier, x's second half not at all
  EXPECT_EQ(rec.barriersRecorded(), b4) << "an Unused binding counted as an access";
  rec.submit();
}

// Without hazardsOnly (what every op outside a span records) each dispatch has its barrier,
// and a new command buffer's first dispatch has one under hazardsOnly too.
TEST_F(VulkanBarrierTest, EveryDispatchHasItsBarrierOutsideASpan) {
  Buffer x(*device_, 4 * kN), y(*device_, 4 * kN), z(*device_, 4 * kN);
  OpRecorder rec(*device_);
  rec.begin();
  axpb(rec, x, 0, y, 0, 1.0f);
  axpb(rec, x, 0, z, 0, 1.0f);
  rec.submit();
  EXPECT_EQ(rec.barriersRecorded(), 2u);
  rec.setSync({true, false, false, true});
  for (int op = 0; op < 2; ++op) {  // immediate submission: each op its own command buffer
    rec.begin();
    axpb(rec, x, 0, y, 0, 1.0f);
    rec.submit();
  }
  EXPECT_EQ(rec.barriersRecorded(), 4u);
  EXPECT_EQ(rec.dispatchesRecorded(), 4u);
}

}  // namespace
}  // namespace sdspeed::vk
