// The generated tensor accessors (runtime/opencl/tensor_access.cpp), checked on the device
// for every storage format: copy kernels read x and write y through LOAD4/STORE4
// (every format), LOAD/STORE and LOADV/STOREV (buffers), on shapes with C % 4 != 0,
// N > 1 and H*W not a multiple of VEC. The copy must be exact, the NC4HW4 padding
// lanes zero (STORE4), and nothing written past the end.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/opencl/cl_error.h"
#include "runtime/opencl/tensor.h"
#include "runtime/opencl/tensor_access.h"
#include "test_support.h"

namespace sdspeed {
namespace {

const char* kCopyKernels = R"CL(
__kernel void copy4(x_PARAMS, y_PARAMS) {
  const int hw = get_global_id(0), s = get_global_id(1), n = get_global_id(2);
  if (hw < x_HW) y_STORE4(n, s, hw, x_LOAD4(n, s, hw));
}
#if !y_IS_IMAGE
__kernel void copy1(x_PARAMS, y_PARAMS) {
  const int hw = get_global_id(0), c = get_global_id(1), n = get_global_id(2);
  if (hw < x_HW) y_STORE(n, c, hw, x_LOAD(n, c, hw));
}
__kernel void copyv(x_PARAMS, y_PARAMS) {  // VEC positions per item, scalar tail
  const int i = get_global_id(0), c = get_global_id(1), n = get_global_id(2);
  const int hwv = x_HW / VEC;
  if (i < hwv) y_STOREV(n, c, i * VEC, x_LOADV(n, c, i * VEC));
  else if (i == hwv)
    for (int hw = hwv * VEC; hw < x_HW; ++hw) y_STORE(n, c, hw, x_LOAD(n, c, hw));
}
#endif
)CL";

Context& ctx() {
  static Context c(selectDevice(listDevices(), ""), ContextOptions{});
  return c;
}

struct Param {
  StorageFormat format;
  Shape shape;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.format.name() << " " << p.shape.text(); }

class Accessors : public ::testing::TestWithParam<Param> {
 protected:
  void run(const std::string& kernelName, size_t dim1) {
    const auto& [f, shape] = GetParam();
    TensorDesc desc{shape, f};
    if (std::string why = desc.unsupportedReason(ctx().device()); !why.empty()) GTEST_SKIP() << why;
    const std::string src = ctx().sources().get("common/prelude.cl") + "#define VEC 4\n" +
                            tensorAccessors("x", f, Access::Read, 4) + tensorAccessors("y", f, Access::Write, 4) +
                            kCopyKernels;
    cl_program program = ctx().programs().get("accessor test " + f.name(), src, "-cl-std=CL1.2");
    ClKernel k = ctx().createKernel(program, kernelName);

    SDSPEED_SEEDED_RNG(rng);
    const auto data = sdspeed_test::randomNonZero(rng, static_cast<size_t>(shape.elements()));
    ClTensor x(ctx(), desc), y(ctx(), desc, /*withCanary=*/true);
    x.upload(data);
    y.poison();
    y.writeCanary();
    int i = x.setArgs(k.get(), 0);
    y.setArgs(k.get(), i);
    size_t global[3] = {static_cast<size_t>(shape.hw()), dim1, static_cast<size_t>(shape.n)};
    clCheck(clEnqueueNDRangeKernel(ctx().queue(), k.get(), 3, nullptr, global, nullptr, 0, nullptr, nullptr),
            "clEnqueueNDRangeKernel");
    ctx().finish();

    const auto expect = unpackTensor(desc, packTensor(desc, data));  // f16: rounded once
    const auto got = y.download();
    ASSERT_EQ(got.size(), expect.size());
    size_t wrong = 0;
    for (size_t j = 0; j < got.size(); ++j) wrong += !(got[j] == expect[j]);
    EXPECT_EQ(wrong, 0u) << kernelName << " " << f.name() << " " << shape.text();
    EXPECT_TRUE(y.canaryIntact());
    if (kernelName == "copy4") {
      const auto phys = physicalToFloats(desc, y.downloadBytes());
      for (size_t idx : paddingIndices(desc)) EXPECT_EQ(phys[idx], 0.0f) << "padding at " << idx;
    }
  }
};

TEST_P(Accessors, Slices) { run("copy4", static_cast<size_t>(GetParam().shape.slices())); }

TEST_P(Accessors, Scalars) {
  if (GetParam().format.storage == Storage::Image2D) GTEST_SKIP() << "images have no single-channel store";
  run("copy1", static_cast<size_t>(GetParam().shape.c));
}

TEST_P(Accessors, Vectors) {
  if (GetParam().format.storage == Storage::Image2D) GTEST_SKIP() << "images have no single-channel store";
  // dim 0 covers ceil(HW / VEC) vectors plus the tail item; the kernel ignores the rest.
  run("copyv", static_cast<size_t>(GetParam().shape.c));
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto& f : StorageFormat::all())
    for (Shape s : {Shape{2, 6, 3, 5}, Shape{1, 8, 4, 4}, Shape{3, 1, 1, 7}}) out.push_back({f, s});
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllFormats, Accessors, ::testing::ValuesIn(params()), [](const auto& info) {
  std::string s = info.param.format.name() + "_" + info.param.shape.text();
  for (char& c : s) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
});

}  // namespace
}  // namespace sdspeed
