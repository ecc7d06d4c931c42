// The OpenCL runtime layer on the real device (PoCL in CI): device selection, error
// names, the program cache (memory and disk), device tensors in every storage format,
// poisoning and canaries, and event timing.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/opencl/cl_error.h"
#include "runtime/opencl/context.h"
#include "runtime/opencl/device.h"
#include "runtime/atomic_file.h"
#include "runtime/opencl/program_cache.h"
#include "runtime/program_entry.h"
#include "runtime/opencl/tensor.h"
#include "runtime/opencl/cl_event.h"
#include "runtime/timing.h"
#include "test_support.h"

using namespace sdspeed;
using sdspeed_test::TempDir;

namespace {

const DeviceInfo& testDevice() {
  static const DeviceInfo dev = selectDevice(listDevices(), "");
  return dev;
}

bool sameDevice(const DeviceInfo& a, const DeviceInfo& b) {
  return a.platform == b.platform && a.id == b.id && a.index() == b.index();
}

std::string swapCase(std::string s) {
  for (char& c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    c = static_cast<char>(std::islower(u) ? std::toupper(u) : std::tolower(u));
  }
  return s;
}

// A kernel source unique to this run (a random constant), so no cache anywhere has it.
std::string uniqueSource(uint64_t salt) {
  return "// salt " + std::to_string(salt) +
         "\n__kernel void fill(__global float* out, const float v) {\n"
         "  out[get_global_id(0)] = v + (float)get_global_id(0);\n}\n";
}

void runFill(Context& ctx, cl_program program, float v) {
  ClKernel k = ctx.createKernel(program, "fill");
  const size_t n = 64;
  ClMem buf = ctx.createBuffer(n * sizeof(float));
  cl_mem m = buf.get();
  clCheck(clSetKernelArg(k.get(), 0, sizeof(cl_mem), &m), "clSetKernelArg");
  clCheck(clSetKernelArg(k.get(), 1, sizeof(float), &v), "clSetKernelArg");
  clCheck(clEnqueueNDRangeKernel(ctx.queue(), k.get(), 1, nullptr, &n, nullptr, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
  std::vector<float> out(n, 0.0f);
  ctx.readBuffer(m, out.data(), n * sizeof(float));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], v + static_cast<float>(i)) << "element " << i;
}

}  // namespace

// ---------------------------------------------------------------- devices

TEST(Devices, ListIsNonEmptyAndDescribed) {
  const auto devices = listDevices();
  ASSERT_FALSE(devices.empty()) << "no OpenCL device: is pocl-opencl-icd installed?";
  for (const auto& d : devices) {
    SCOPED_TRACE(d.index() + " " + d.name);
    EXPECT_NE(d.id, nullptr);
    EXPECT_NE(d.platform, nullptr);
    EXPECT_FALSE(d.name.empty());
    EXPECT_EQ(d.index(), std::to_string(d.platformIndex) + ":" + std::to_string(d.deviceIndex));
    EXPECT_GT(d.computeUnits, 0u);
    EXPECT_GT(d.maxWorkGroupSize, 0u);
    EXPECT_GT(d.globalMemBytes, 0u);
    EXPECT_GT(d.maxAllocBytes, 0u);
    EXPECT_FALSE(d.key().empty());
    EXPECT_EQ(d.key().find(' '), std::string::npos) << d.key();
  }
}

TEST(Devices, SelectDefault) {
  const auto devices = listDevices();
  ASSERT_FALSE(devices.empty());
  const DeviceInfo* want = &devices.front();
  for (const auto& d : devices)
    if (d.isGpu()) {
      want = &d;
      break;
    }
  EXPECT_TRUE(sameDevice(selectDevice(devices, ""), *want));
}

TEST(Devices, SelectDefaultPrefersGpu) {
  // A made-up list: the GPU comes second but is the default.
  DeviceInfo cpu, gpu;
  cpu.name = "Some CPU";
  cpu.type = DeviceType::Cpu;
  cpu.deviceIndex = 0;
  gpu.name = "Some GPU";
  gpu.type = DeviceType::Gpu;
  gpu.deviceIndex = 1;
  EXPECT_EQ(selectDevice({cpu, gpu}, "").name, "Some GPU");
  EXPECT_EQ(selectDevice({cpu}, "").name, "Some CPU");
}

TEST(Devices, SelectByIndex) {
  const auto devices = listDevices();
  ASSERT_FALSE(devices.empty());
  for (const auto& d : devices) EXPECT_TRUE(sameDevice(selectDevice(devices, d.index()), d)) << d.index();
}

TEST(Devices, SelectByCaseInsensitiveNameSubstring) {
  const auto devices = listDevices();
  ASSERT_FALSE(devices.empty());
  for (const auto& d : devices) {
    ASSERT_GE(d.name.size(), 3u);
    // A piece from the middle of the name, with its case flipped.
    const std::string piece = swapCase(d.name.substr(1, std::min<size_t>(8, d.name.size() - 2)));
    SCOPED_TRACE("'" + piece + "' from '" + d.name + "'");
    const DeviceInfo got = selectDevice(devices, piece);
    // The first device whose name contains the piece (ignoring case).
    std::string lowPiece = piece;
    std::transform(lowPiece.begin(), lowPiece.end(), lowPiece.begin(), ::tolower);
    const DeviceInfo* first = nullptr;
    for (const auto& e : devices) {
      std::string n = e.name;
      std::transform(n.begin(), n.end(), n.begin(), ::tolower);
      if (n.find(lowPiece) != std::string::npos) {
        first = &e;
        break;
      }
    }
    ASSERT_NE(first, nullptr);
    EXPECT_TRUE(sameDevice(got, *first));
  }
}

TEST(Devices, UnknownNameThrows) {
  const auto devices = listDevices();
  ASSERT_FALSE(devices.empty());
  std::string msg = sdspeed_test::errorMessage([&] { selectDevice(devices, "nosuchdevice-zq"); });
  EXPECT_NE(msg.find("no OpenCL device matches 'nosuchdevice-zq'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sdspeed devices"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
}

TEST(Devices, OutOfRangeIndexThrows) {
  const auto devices = listDevices();
  ASSERT_FALSE(devices.empty());
  for (const std::string bad : {"99:0", "0:99", "-1:0"}) {
    SCOPED_TRACE(bad);
    std::string msg = sdspeed_test::errorMessage([&] { selectDevice(devices, bad); });
    EXPECT_NE(msg.find("no OpenCL device at index " + bad), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  }
  std::string msg = sdspeed_test::errorMessage([] { selectDevice({}, ""); });
  EXPECT_NE(msg.find("no OpenCL device found"), std::string::npos) << msg;
}

TEST(ClErrors, Names) {
  EXPECT_EQ(clErrorName(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
  EXPECT_EQ(clErrorName(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_EQ(clErrorName(CL_INVALID_KERNEL_NAME), "CL_INVALID_KERNEL_NAME");
  EXPECT_EQ(clErrorName(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_EQ(clErrorName(-1234), "CL_UNKNOWN_ERROR(-1234)");
  ClError e("clFoo", CL_OUT_OF_RESOURCES, "detail here");
  EXPECT_STREQ(e.what(), "clFoo: CL_OUT_OF_RESOURCES (-5): detail here");
  EXPECT_EQ(e.code(), CL_OUT_OF_RESOURCES);
  EXPECT_EQ(e.call(), "clFoo");
  EXPECT_THROW(clCheck(CL_INVALID_VALUE, "clBar"), ClError);
  EXPECT_NO_THROW(clCheck(CL_SUCCESS, "clBar"));
}

// ---------------------------------------------------------------- program cache

TEST(ProgramCache, MemoryHitOnSecondBuild) {
  SDSPEED_SEEDED_RNG(rng);
  TempDir dir;
  Context ctx(testDevice(), ContextOptions{"", dir.path()});
  const std::string src = uniqueSource(rng());
  cl_program a = ctx.programs().get("test.fill", src, "-cl-std=CL1.2");
  auto st = ctx.programs().stats();
  EXPECT_EQ(st.builds, 1);
  EXPECT_EQ(st.memoryHits, 0);
  EXPECT_EQ(st.diskHits, 0);
  cl_program b = ctx.programs().get("test.fill", src, "-cl-std=CL1.2");
  EXPECT_EQ(a, b);
  st = ctx.programs().stats();
  EXPECT_EQ(st.builds, 1);
  EXPECT_EQ(st.memoryHits, 1);
  EXPECT_EQ(st.diskHits, 0);
  // Other options are another program.
  cl_program c = ctx.programs().get("test.fill", src, "-cl-std=CL1.2 -DUNUSED=1");
  EXPECT_NE(a, c);
  EXPECT_EQ(ctx.programs().stats().builds, 2);
  EXPECT_NE(ctx.programs().keyFor(src, "-cl-std=CL1.2"), ctx.programs().keyFor(src, "-cl-std=CL1.2 -DUNUSED=1"));
  const auto recs = ctx.programs().records();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].label, "test.fill");
  EXPECT_EQ(recs[0].source, src);
  EXPECT_EQ(recs[0].key, ctx.programs().keyFor(src, "-cl-std=CL1.2"));
  runFill(ctx, a, 3.5f);
}

// A sweep's builder threads and its timing thread ask for the same program at once:
// it is compiled once, the others wait for it. `builds` counts compiles (every one,
// whether or not another thread got there first), so a cache that let each thread
// compile its own copy shows builds > 1 here.
TEST(ProgramCache, ConcurrentRequestsBuildOnce) {
  SDSPEED_SEEDED_RNG(rng);
  Context ctx(testDevice(), ContextOptions{"", ""});
  const std::string src = uniqueSource(rng());
  std::vector<cl_program> got(6, nullptr);
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};  // all threads ask at once, not one after another
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      got[t] = ctx.programs().get("test.fill", src, "");
    });
  go = true;
  for (auto& t : threads) t.join();
  for (cl_program p : got) EXPECT_EQ(p, got[0]);
  const auto st = ctx.programs().stats();
  EXPECT_EQ(st.builds, 1);
  EXPECT_EQ(st.memoryHits, static_cast<int>(got.size()) - 1);
  EXPECT_EQ(ctx.programs().records().size(), 1u);
  runFill(ctx, got[0], 2.5f);
}

// A failed build is not left marked as in flight: the next request builds it again
// and gets the compiler's error too, instead of waiting forever.
TEST(ProgramCache, FailedBuildCanBeRequestedAgain) {
  SDSPEED_SEEDED_RNG(rng);
  Context ctx(testDevice(), ContextOptions{"", ""});
  const std::string src = "// " + std::to_string(rng()) + "\n__kernel void broken(__global float* o) { o[0] = q_undeclared; }\n";
  for (int attempt = 0; attempt < 2; ++attempt)
    EXPECT_THROW(ctx.programs().get("test.broken", src, ""), ClError) << "attempt " << attempt;
}

TEST(ProgramCache, SecondContextLoadsFromDisk) {
  SDSPEED_SEEDED_RNG(rng);
  TempDir dir;
  const std::string src = uniqueSource(rng());
  std::string key;
  {
    Context first(testDevice(), ContextOptions{"", dir.path()});
    first.programs().get("test.fill", src, "");
    EXPECT_EQ(first.programs().stats().builds, 1);
    key = first.programs().keyFor(src, "");
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/programs/" + key + ".bin"))
      << "no binary written under " << dir.path();
  Context second(testDevice(), ContextOptions{"", dir.path()});
  cl_program p = second.programs().get("test.fill", src, "");
  const auto st = second.programs().stats();
  EXPECT_EQ(st.diskHits, 1);
  EXPECT_EQ(st.builds, 0);
  EXPECT_EQ(st.memoryHits, 0);
  // The program from the binary runs.
  const float v = static_cast<float>(rng() % 1000) + 0.25f;
  runFill(second, p, v);

  // Without a disk cache the same source is built again.
  Context third(testDevice(), ContextOptions{"", ""});
  third.programs().get("test.fill", src, "");
  EXPECT_EQ(third.programs().stats().builds, 1);
  EXPECT_EQ(third.programs().stats().diskHits, 0);
}

TEST(ProgramCache, CorruptBinaryIsRebuilt) {
  SDSPEED_SEEDED_RNG(rng);
  TempDir dir;
  const std::string src = uniqueSource(rng());
  Context ctx(testDevice(), ContextOptions{"", dir.path()});
  const std::string path = dir.path() + "/programs/" + ctx.programs().keyFor(src, "") + ".bin";
  std::filesystem::create_directories(dir.path() + "/programs");
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not a device binary", f);
    std::fclose(f);
  }
  cl_program p = ctx.programs().get("test.fill", src, "");
  EXPECT_EQ(ctx.programs().stats().builds, 1);
  EXPECT_EQ(ctx.programs().stats().diskHits, 0);
  runFill(ctx, p, 1.5f);
}

// A damaged disk entry (issue #19) used to reach clCreateProgramWithBinary, where PoCL
// crashes on a truncated binary, on every run until the cache was deleted. Each kind of
// damage is made here from a real entry; a fresh cache must warn naming the file,
// rebuild (builds 1, diskHits 0), run the program, and leave a valid entry that the
// next cache loads from disk.
TEST(ProgramCache, DamagedEntriesAreRebuiltNotHandedToTheDriver) {
  SDSPEED_SEEDED_RNG(rng);
  TempDir dir;
  const std::string src = uniqueSource(rng());
  std::string key, path;
  {
    Context first(testDevice(), ContextOptions{"", dir.path()});
    first.programs().get("test.fill", src, "");
    key = first.programs().keyFor(src, "");
    path = dir.path() + "/programs/" + key + ".bin";
  }
  std::string good;
  ASSERT_TRUE(readFile(path, good)) << path;
  ASSERT_TRUE(decodeProgramEntry(good, key).ok()) << decodeProgramEntry(good, key).error;
  const std::string bin = decodeProgramEntry(good, key).binary;
  auto flipBit = [&](std::string s, size_t byte) {
    s[byte] = static_cast<char>(s[byte] ^ (1 << (rng() % 8)));
    return s;
  };
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {"truncated binary", good.substr(0, kProgramEntryHeaderBytes + bin.size() / 2)},
      {"truncated header", good.substr(0, kProgramEntryHeaderBytes / 2)},
      {"empty file", ""},
      {"zeroed", std::string(good.size(), '\0')},
      {"bit flipped in the binary", flipBit(good, kProgramEntryHeaderBytes + rng() % bin.size())},
      {"bit flipped in the header", flipBit(good, rng() % kProgramEntryHeaderBytes)},
      {"bytes appended", good + "trailing"},
      {"another key's entry", encodeProgramEntry("0123456789abcdef", bin)},
      {"older entry without header", bin},
      {"older entry, truncated", bin.substr(0, bin.size() / 2)},
  };
  for (const auto& [what, bytes] : damaged) {
    SCOPED_TRACE(what);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    testing::internal::CaptureStderr();
    Context ctx(testDevice(), ContextOptions{"", dir.path()});
    cl_program p = ctx.programs().get("test.fill", src, "");
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(ctx.programs().stats().builds, 1);
    EXPECT_EQ(ctx.programs().stats().diskHits, 0);
    EXPECT_CONTAINS(err, path);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    runFill(ctx, p, static_cast<float>(rng() % 100));
    std::string after;
    ASSERT_TRUE(readFile(path, after));
    EXPECT_TRUE(decodeProgramEntry(after, key).ok()) << decodeProgramEntry(after, key).error;
    Context next(testDevice(), ContextOptions{"", dir.path()});
    next.programs().get("test.fill", src, "");
    EXPECT_EQ(next.programs().stats().diskHits, 1);
    EXPECT_EQ(next.programs().stats().builds, 0);
  }
}

TEST(ProgramCache, SyntaxErrorThrowsWithCompilerLog) {
  SDSPEED_SEEDED_RNG(rng);
  Context ctx(testDevice(), ContextOptions{"", ""});
  const std::string src = "// " + std::to_string(rng()) +
                          "\n__kernel void broken(__global float* out) {\n"
                          "  out[0] = sdspeed_undeclared_identifier_q + 1.0f;\n}\n";
  try {
    ctx.programs().get("test.broken", src, "");
    FAIL() << "a program with a syntax error built";
  } catch (const ClError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), CL_BUILD_PROGRAM_FAILURE) << what;
    EXPECT_NE(what.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << what;
    EXPECT_NE(what.find("test.broken"), std::string::npos) << "names the program: " << what;
    // The compiler log: the compiler's own words about the undeclared identifier.
    EXPECT_NE(what.find("sdspeed_undeclared_identifier_q"), std::string::npos) << what;
    EXPECT_NE(what.find("error"), std::string::npos) << what;
  }
  EXPECT_EQ(ctx.programs().stats().builds, 0);
  EXPECT_TRUE(ctx.programs().records().empty());
}

// ---------------------------------------------------------------- device tensors

class DeviceTensorTest : public ::testing::TestWithParam<StorageFormat> {
 protected:
  void SetUp() override {
    if (GetParam().storage == Storage::Image2D && !testDevice().imageSupport)
      GTEST_SKIP() << testDevice().name << " has no image support";
  }
};

TEST_P(DeviceTensorTest, UploadDownloadRoundTrip) {
  SDSPEED_SEEDED_RNG(rng);
  Context ctx(testDevice(), ContextOptions{"", ""});
  for (const Shape& shape : {Shape{2, 7, 3, 5}, Shape{1, 8, 4, 4}}) {
    SCOPED_TRACE(shape.text());
    const TensorDesc d{shape, GetParam()};
    ClTensor t(ctx, d);
    const auto x = sdspeed_test::randomNonZero(rng, static_cast<size_t>(shape.elements()), 1e-2f, 100.0f);
    t.poison();  // so a transfer that writes nothing is caught
    t.upload(x);
    const auto back = t.download();
    ASSERT_EQ(back.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = d.format.dtype == DType::F32 ? x[i] : static_cast<float>(Eigen::half(x[i]));
      ASSERT_EQ(back[i], want) << "element " << i;
    }
    // The device holds exactly the packed bytes, padding lanes zero.
    EXPECT_EQ(t.downloadBytes(), packTensor(d, x));
  }
}

TEST_P(DeviceTensorTest, PoisonMakesEverythingNaN) {
  SDSPEED_SEEDED_RNG(rng);
  Context ctx(testDevice(), ContextOptions{"", ""});
  const TensorDesc d{{1, 6, 3, 4}, GetParam()};
  ClTensor t(ctx, d);
  t.upload(sdspeed_test::randomNonZero(rng, static_cast<size_t>(d.shape.elements())));
  t.poison();
  for (float v : t.download()) ASSERT_TRUE(std::isnan(v)) << v;
  const auto phys = physicalToFloats(d, t.downloadBytes());
  ASSERT_EQ(phys.size(), d.physicalElements());
  for (float v : phys) ASSERT_TRUE(std::isnan(v)) << "padding lanes are poisoned too: " << v;
}

INSTANTIATE_TEST_SUITE_P(AllFormats, DeviceTensorTest, ::testing::ValuesIn(StorageFormat::all()),
                         [](const ::testing::TestParamInfo<StorageFormat>& info) {
                           std::string n = info.param.name();
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return n;
                         });

TEST(DeviceTensorCanary, DetectsWritesPastTheEnd) {
  SDSPEED_SEEDED_RNG(rng);
  Context ctx(testDevice(), ContextOptions{"", ""});
  for (const char* fmt : {"f32.buffer.nchw", "f16.buffer.nc4hw4"}) {
    SCOPED_TRACE(fmt);
    const TensorDesc d{{1, 5, 3, 3}, StorageFormat::parse(fmt)};
    ClTensor t(ctx, d, /*withCanary=*/true);
    ASSERT_TRUE(t.hasCanary());
    t.writeCanary();
    EXPECT_TRUE(t.canaryIntact());
    // Writing the whole tensor, and its very last byte, leaves the canary alone.
    t.upload(sdspeed_test::randomNonZero(rng, static_cast<size_t>(d.shape.elements())));
    const uint8_t last = 0x3C;
    ctx.writeBuffer(t.mem(), &last, 1, d.bytes() - 1);
    t.poison();
    EXPECT_TRUE(t.canaryIntact());
    // One byte past the end, anywhere in the canary region, is caught.
    std::uniform_int_distribution<size_t> where(0, DeviceTensor::kCanaryBytes - 1);
    for (size_t off : {size_t{0}, DeviceTensor::kCanaryBytes - 1, where(rng)}) {
      SCOPED_TRACE("canary offset " + std::to_string(off));
      t.writeCanary();
      ASSERT_TRUE(t.canaryIntact());
      const uint8_t clobber = static_cast<uint8_t>(DeviceTensor::kCanaryByte ^ (1 + rng() % 255));
      ctx.writeBuffer(t.mem(), &clobber, 1, d.bytes() + off);
      EXPECT_FALSE(t.canaryIntact());
    }
  }
  // Without a canary: nothing allocated past the end, and the check is vacuous.
  ClTensor plain(ctx, TensorDesc{{1, 4, 2, 2}, StorageFormat{}}, false);
  EXPECT_FALSE(plain.hasCanary());
  size_t size = 0;
  clCheck(clGetMemObjectInfo(plain.mem(), CL_MEM_SIZE, sizeof(size), &size, nullptr), "clGetMemObjectInfo");
  EXPECT_EQ(size, plain.desc().bytes());
}

// ---------------------------------------------------------------- memory tracking

// Releasing a component's buffers must lower the live count, or a released pipeline
// component would still count towards the peak of the next one.
TEST(MemoryTracking, ReleasedObjectsLeaveTheLiveCount) {
  Context ctx(testDevice(), ContextOptions{"", ""});
  const uint64_t before = ctx.memoryStats().liveBytes;
  {
    ClMem a = ctx.createBuffer(4096);
    EXPECT_EQ(ctx.memoryStats().liveBytes, before + 4096);
    // A sub-buffer adds nothing; the parent's bytes leave only when both are gone,
    // whichever handle is dropped first.
    ClMem sub = ctx.createSubBuffer(a.get(), 0, 1024);
    a = ClMem();
    EXPECT_EQ(ctx.memoryStats().liveBytes, before + 4096);
  }
  EXPECT_EQ(ctx.memoryStats().liveBytes, before);
  if (testDevice().imageSupport) {
    ClMem img = ctx.createImage2D(8, 4, CL_FLOAT);
    EXPECT_EQ(ctx.memoryStats().liveBytes, before + 8 * 4 * 4 * 4);
  }
  EXPECT_EQ(ctx.memoryStats().liveBytes, before);
  EXPECT_GE(ctx.memoryStats().peakBytes, before + 4096);
}

// A window sees the high-water mark from its start only, and resetPeak() (the
// ablation's per row reset) leaves it alone.
TEST(MemoryTracking, PeakWindowCountsFromItsStart) {
  Context ctx(testDevice(), ContextOptions{"", ""});
  ClMem big = ctx.createBuffer(1 << 16);
  big = ClMem();
  Context::PeakWindow w(ctx);
  EXPECT_EQ(w.addedBytes(), 0u);
  {
    ClMem a = ctx.createBuffer(1000);
    ClMem b = ctx.createBuffer(500);
  }
  ctx.resetPeak();
  ClMem c = ctx.createBuffer(200);
  EXPECT_EQ(w.addedBytes(), 1500u);
  EXPECT_EQ(w.startBytes() + 1500, w.peakBytes());
  EXPECT_EQ(ctx.memoryStats().peakBytes, ctx.memoryStats().liveBytes);
}

// ---------------------------------------------------------------- timing

TEST(Timing, SummarizeKnownSamples) {
  TimingStats s = summarize({5.0, 1.0, 3.0});
  EXPECT_EQ(s.repeats, 3);
  EXPECT_DOUBLE_EQ(s.medianMs, 3.0);
  EXPECT_DOUBLE_EQ(s.minMs, 1.0);
  EXPECT_DOUBLE_EQ(s.maxMs, 5.0);
  EXPECT_EQ(s.samplesMs, (std::vector<double>{5.0, 1.0, 3.0}));  // in measured order

  s = summarize({4.0, 1.0, 3.0, 2.0, 100.0, 0.5});
  EXPECT_EQ(s.repeats, 6);
  EXPECT_DOUBLE_EQ(s.medianMs, 2.5);  // mean of the middle two: 2 and 3
  EXPECT_DOUBLE_EQ(s.minMs, 0.5);
  EXPECT_DOUBLE_EQ(s.maxMs, 100.0);

  s = summarize({7.25});
  EXPECT_DOUBLE_EQ(s.medianMs, 7.25);
  EXPECT_DOUBLE_EQ(s.minMs, 7.25);
  EXPECT_DOUBLE_EQ(s.maxMs, 7.25);
}

TEST(Timing, RotationsForBounds) {
  DeviceInfo dev;
  dev.globalCacheBytes = 1 << 20;   // 1 MiB LLC
  dev.globalMemBytes = 1ull << 30;  // 1 GiB
  TimingPolicy policy;
  policy.maxRotations = 64;
  EXPECT_EQ(rotationsFor(dev, 0, policy), 1);
  EXPECT_EQ(rotationsFor(dev, 1 << 20, policy), 3);          // 3 MiB > 2 x 1 MiB
  EXPECT_EQ(rotationsFor(dev, 3 << 20, policy), 1);          // one copy already exceeds 2x LLC
  EXPECT_EQ(rotationsFor(dev, 1 << 10, policy), 64);         // capped by maxRotations
  policy.maxRotations = 5;
  EXPECT_EQ(rotationsFor(dev, 1 << 10, policy), 5);
  dev.globalMemBytes = 8 << 20;                              // a quarter is 2 MiB
  policy.maxRotations = 64;
  EXPECT_EQ(rotationsFor(dev, 1 << 20, policy), 2);          // capped by memory
  EXPECT_EQ(rotationsFor(dev, 16 << 20, policy), 1);         // never below 1

  // Random sizes: within bounds, and past 2x LLC unless a cap applies.
  SDSPEED_SEEDED_RNG(rng);
  dev.globalCacheBytes = 4 << 20;
  dev.globalMemBytes = 2ull << 30;
  policy.maxRotations = 32;
  std::uniform_int_distribution<size_t> bytes(1, 64 << 20);
  for (int i = 0; i < 1000; ++i) {
    const size_t b = bytes(rng);
    const int r = rotationsFor(dev, b, policy);
    ASSERT_GE(r, 1) << b;
    ASSERT_LE(r, policy.maxRotations) << b;
    if (r > 1) {
      ASSERT_LE(static_cast<uint64_t>(r) * b, dev.globalMemBytes / 4) << b;
    }
    if (r < policy.maxRotations) {
      ASSERT_GT(static_cast<uint64_t>(r) * b, 2 * dev.globalCacheBytes) << b;
    }
  }
}

TEST(Timing, TimeOpOnATinyKernel) {
  SDSPEED_SEEDED_RNG(rng);
  Context ctx(testDevice(), ContextOptions{"", ""});
  cl_program prog = ctx.programs().get(
      "test.halve_add_one",
      "__kernel void halve_add_one(__global float* a) { size_t i = get_global_id(0); a[i] = a[i] * 0.5f + 1.0f; }\n",
      "-cl-std=CL1.2");
  ClKernel k = ctx.createKernel(prog, "halve_add_one");
  const size_t n = 1024;
  const int rotations = 3;
  std::vector<std::vector<float>> host;
  std::vector<ClMem> bufs;
  for (int r = 0; r < rotations; ++r) {
    host.push_back(sdspeed_test::randomNonZero(rng, n, 1.0f, 1000.0f));
    bufs.push_back(ctx.createBuffer(n * sizeof(float)));
    ctx.writeBuffer(bufs.back().get(), host.back().data(), n * sizeof(float));
  }
  std::vector<int> calls(rotations, 0);
  TimingPolicy policy;
  policy.warmup = 2;
  policy.minRepeats = 7;
  policy.maxRepeats = 40;
  policy.minTotalMs = 0.0;
  auto enqueue = [&](int r) {
    EXPECT_GE(r, 0);
    EXPECT_LT(r, rotations);
    ++calls[static_cast<size_t>(r)];
    cl_mem m = bufs[static_cast<size_t>(r)].get();
    clCheck(clSetKernelArg(k.get(), 0, sizeof(cl_mem), &m), "clSetKernelArg");
    cl_event ev = nullptr;
    clCheck(clEnqueueNDRangeKernel(ctx.queue(), k.get(), 1, nullptr, &n, nullptr, 0, nullptr, &ev),
            "clEnqueueNDRangeKernel");
    OpEvents events;
    events.push_back(clEvent(ClEvent(ev)));
    return events;
  };
  TimingStats s = timeOp(ctx, rotations, enqueue, policy);
  EXPECT_GE(s.repeats, policy.minRepeats);
  EXPECT_LE(s.repeats, policy.maxRepeats);
  EXPECT_EQ(s.repeats, policy.minRepeats);  // minTotalMs 0: no reason to go on
  EXPECT_EQ(s.samplesMs.size(), static_cast<size_t>(s.repeats));
  EXPECT_EQ(s.rotations, rotations);
  EXPECT_LE(s.minMs, s.medianMs);
  EXPECT_LE(s.medianMs, s.maxMs);
  EXPECT_GE(s.minMs, 0.0);
  EXPECT_GT(s.maxMs, 0.0) << "a kernel over 1024 elements took no time at all";
  EXPECT_LT(s.maxMs, 1000.0);
  int total = 0;
  for (int c : calls) total += c;
  EXPECT_EQ(total, policy.warmup + s.repeats);
  // Rotation is round-robin: the copies are used evenly.
  EXPECT_LE(*std::max_element(calls.begin(), calls.end()) - *std::min_element(calls.begin(), calls.end()), 1);

  // Each copy saw its kernel applied calls[r] times (a * 0.5 is exact, so the
  // result does not depend on contraction into fma).
  for (int r = 0; r < rotations; ++r) {
    std::vector<float> got(n);
    ctx.readBuffer(bufs[static_cast<size_t>(r)].get(), got.data(), n * sizeof(float));
    for (size_t i = 0; i < n; ++i) {
      float want = host[static_cast<size_t>(r)][i];
      for (int j = 0; j < calls[static_cast<size_t>(r)]; ++j) want = want * 0.5f + 1.0f;
      ASSERT_EQ(got[i], want) << "rotation " << r << " element " << i;
    }
  }

  // A time budget the op never reaches: repeats stop at maxRepeats.
  policy.minRepeats = 2;
  policy.maxRepeats = 9;
  policy.minTotalMs = 1e9;
  s = timeOp(ctx, 1, enqueue, policy);
  EXPECT_EQ(s.repeats, 9);
  EXPECT_EQ(s.rotations, 1);
  EXPECT_EQ(s.warmupRuns, policy.warmup);  // warmupMs 0: the counted runs only
  EXPECT_TRUE(s.warmupSettled);

  // The timed warm-up: runs go on past the counted ones until warmupMs of wall time has
  // passed and two batches agree (or 2 x warmupMs); warmupRuns counts them all.
  std::fill(calls.begin(), calls.end(), 0);
  policy.warmup = 1;
  policy.minRepeats = policy.maxRepeats = 3;
  policy.minTotalMs = 0;
  policy.warmupMs = 20;
  policy.warmGapMs = 0;  // always, though the last timeOp just ended
  policy.warmupOnCpu = true;
  s = timeOp(ctx, rotations, enqueue, policy);
  EXPECT_GT(s.warmupRuns, policy.warmup);
  EXPECT_GE(s.warmupWallMs, policy.warmupMs);
  EXPECT_LT(s.warmupWallMs, 2 * policy.warmupMs + 2000.0);  // the cap, and room for a slow CI host
  total = 0;
  for (int c : calls) total += c;
  EXPECT_EQ(total, s.warmupRuns + s.repeats);
  // Within warmGapMs of the last timeOp the device is still warm: counted runs only.
  policy.warmGapMs = 60000;
  s = timeOp(ctx, rotations, enqueue, policy);
  EXPECT_EQ(s.warmupRuns, policy.warmup);
  // A CPU device (PoCL, CI's) has no clocks to wake: counted runs only, unless asked.
  policy.warmGapMs = 0;
  policy.warmupOnCpu = false;
  s = timeOp(ctx, rotations, enqueue, policy);
  if (ctx.caps().isCpu())
    EXPECT_EQ(s.warmupRuns, policy.warmup);
  else
    EXPECT_GT(s.warmupRuns, policy.warmup);

  EXPECT_THROW(eventSpanNs({}), Error);

  // Stages (`bench --stages`): none for a one-kernel op; for two kernels a run, each one's
  // own median, within the run's span; none when runs enqueue different counts.
  EXPECT_TRUE(s.stageMedianMs.empty());
  policy = TimingPolicy{};
  policy.warmup = 1;
  policy.minRepeats = policy.maxRepeats = 5;
  policy.minTotalMs = 0;
  policy.warmupMs = 0;
  auto twice = [&](int r) {
    OpEvents e = enqueue(r);
    OpEvents more = enqueue(r);
    e.insert(e.end(), more.begin(), more.end());
    return e;
  };
  s = timeOp(ctx, 1, twice, policy);
  ASSERT_EQ(s.stageMedianMs.size(), 2u);
  for (double st : s.stageMedianMs) {
    EXPECT_GE(st, 0.0);
    EXPECT_LE(st, s.maxMs);
  }
  int runs = 0;
  auto uneven = [&](int r) { return ++runs % 2 ? enqueue(r) : twice(r); };
  s = timeOp(ctx, 1, uneven, policy);
  EXPECT_TRUE(s.stageMedianMs.empty());
}
