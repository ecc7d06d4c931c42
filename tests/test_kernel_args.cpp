// Named kernel arguments (kernels/kernel_args.h) and their OpenCL lowering
// (runtime/opencl/kernel_signature.h, bound_kernel.h): the parameter lists sdspeed's
// kernels are written with are read back exactly, branches resolved by the program's
// defines; a binding that misses, adds or mistypes an argument is an error naming it;
// and a bound kernel receives each value at the index its list gives it.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "kernels/family.h"
#include "kernels/registry.h"
#include "runtime/opencl/bound_kernel.h"
#include "runtime/opencl/kernel_signature.h"
#include "runtime/opencl/tensor.h"
#include "test_support.h"

using namespace sdspeed;
using sdspeed_test::errorMessage;

namespace {

using K = ClKernelParam::Kind;

std::string names(const ClKernelSignature& s) {
  std::string out;
  for (const auto& p : s.params) out += (out.empty() ? "" : ",") + p.name;
  return out;
}

// conv_gemm's list, as conv.cl writes it: what it takes depends on the variant's defines.
const char* kBranchy = R"(
// a comment naming void gemm( in passing
__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void gemm(SD_REGION(const float, A), const int aStride, /* inline */ const int K,
#ifdef ONE
          x_PARAMS,
#else
          SD_REGION(const float, B), const int ldb,
#endif
#if defined(TWO) || defined(THREE)
          SD_REGION(float2, C)
#else
          y_PARAMS, const uint flags, __global int* counters
#endif
) {
}
)";

}  // namespace

TEST(KernelSignature, ReadsEveryParameterFormAndResolvesBranches) {
  const auto plain = parseKernelSignature(kBranchy, "gemm");
  EXPECT_EQ(names(plain), "A,aStride,K,B,ldb,y,flags,counters");
  ASSERT_EQ(plain.params.size(), 8u);
  EXPECT_EQ(plain.params[0].kind, K::Region);
  EXPECT_EQ(plain.params[0].elementBytes, 4u);
  EXPECT_EQ(plain.params[1].kind, K::Int);
  EXPECT_EQ(plain.params[5].kind, K::Tensor);
  EXPECT_EQ(plain.params[6].kind, K::Uint);
  EXPECT_EQ(plain.params[7].kind, K::Buffer);

  const auto one = parseKernelSignature(std::string("#define ONE 1\n#define THREE 1\n") + kBranchy, "gemm");
  EXPECT_EQ(names(one), "A,aStride,K,x,C");
  EXPECT_EQ(one.params.back().kind, K::Region);
  EXPECT_EQ(one.params.back().elementBytes, 8u);  // float2
}

TEST(KernelSignature, EveryKernelOfEveryFamilyParsesUnderEachVariantsDefines) {
  // The lists as the repository writes them: each family's source under each of its
  // variants' fixed defines (conv_gemm's list differs per variant).
  const std::regex kernelName(R"(__kernel\b[^{;]*?\bvoid\s+([A-Za-z_][A-Za-z0-9_]*)\s*\()");
  int parsed = 0;
  for (const auto& fam : allFamilies()) {
    std::ifstream in(std::string(SDSPEED_SOURCE_DIR) + "/kernels/" + fam->sourcePath());
    std::stringstream text;
    text << in.rdbuf();
    ASSERT_FALSE(text.str().empty()) << fam->sourcePath();
    for (const auto& v : fam->variants()) {
      std::string src;
      for (const auto& [k, x] : v.defines) src += "#define " + k + " " + std::to_string(x) + "\n";
      src += text.str();
      for (std::sregex_iterator it(src.begin(), src.end(), kernelName), end; it != end; ++it) {
        const std::string k = (*it)[1];
        EXPECT_NO_THROW(parseKernelSignature(src, k)) << fam->name() << "." << v.name << ": " << k;
        ++parsed;
      }
    }
  }
  EXPECT_GT(parsed, 40);
  // A float scalar and a float2 region, as attention.cl spells them.
  const char* src = "__kernel void attn_row_softmax(SD_REGION(float, scores), SD_REGION(float2, stats),\n"
                    "                               const int L, const int normalize) {}\n";
  EXPECT_EQ(names(parseKernelSignature(src, "attn_row_softmax")), "scores,stats,L,normalize");
  EXPECT_EQ(parseKernelSignature(src, "attn_row_softmax").params[1].elementBytes, 8u);
}

TEST(KernelSignature, BadListsAreOneErrorNamingTheKernel) {
  EXPECT_NE(errorMessage([] { parseKernelSignature(kBranchy, "absent"); }).find("kernel absent is not declared"),
            std::string::npos);
  EXPECT_NE(errorMessage([] { parseKernelSignature("__kernel void k(const double d) {}", "k"); })
                .find("'const double d'"),
            std::string::npos);
  EXPECT_NE(errorMessage([] { parseKernelSignature("__kernel void k(SD_REGION(short, r)) {}", "k"); })
                .find("unknown element type 'short'"),
            std::string::npos);
  EXPECT_NE(errorMessage([] { parseKernelSignature("__kernel void k(\n#if X > 1\nconst int a\n#endif\n) {}", "k"); })
                .find("unsupported #if"),
            std::string::npos);
  EXPECT_NE(errorMessage([] { parseKernelSignature("__kernel void k(const int a, const float a) {}", "k"); })
                .find("declares 'a' twice"),
            std::string::npos);
  EXPECT_NE(errorMessage([] { parseKernelSignature("__kernel void k(const int a", "k"); }).find("does not close"),
            std::string::npos);
  EXPECT_NE(errorMessage([] { parseKernelSignature(kBranchy, "gemm(.*"); }).find("is not a kernel name"),
            std::string::npos);
  EXPECT_NE(errorMessage([] { parseKernelSignature("__kernel void k(\n#ifdef A B\nconst int a\n#endif\n) {}", "k"); })
                .find("names no single macro"),
            std::string::npos);
}

TEST(KernelSignature, OnlyUnconditionalDefinesSelectBranches) {
  // VEC is defined only inside a conditional (as groupnorm.cl's fallback is), ONE at the
  // top level and then #undef'd: neither counts, so both lists take their #else.
  const std::string src = "#ifndef VEC\n#define VEC 1\n#endif\n#define ONE 1\n#undef ONE\n"
                          "__kernel void k(\n#ifdef VEC\nconst int v,\n#else\nconst int nv,\n#endif\n"
                          "#ifdef ONE\nconst int one\n#else\nconst int none\n#endif\n) {}";
  EXPECT_EQ(names(parseKernelSignature(src, "k")), "nv,none");
}

// ---------------------------------------------------------------- binding (a device)

namespace {

// Writes its scalars into a float2 region: out[0] = (n, s), out[1] = (u, x's first element).
const char* kProbe = R"(
#define x_PARAMS __global const float* x_base, const int x_C, const int x_HW, const int x_W, const uint x_off
#define SD_REGION(T, X) __global T* X##_region, const uint X##_off
__kernel void probe(const float s, x_PARAMS, SD_REGION(float2, out), const int n, const uint u) {
  __global float2* o = out_region + out_off;
  o[0] = (float2)((float)n, s);
  o[1] = (float2)((float)u, x_base[x_off] + (float)(x_C * 1000 + x_HW * 10 + x_W));
}
)";

const DeviceInfo& testDevice() {
  static const DeviceInfo dev = selectDevice(listDevices(), "");
  return dev;
}

struct Probe {
  Context ctx{testDevice(), ContextOptions{"", ""}};
  ClBuiltProgram program{nullptr, kProbe};
  Probe() { program.handle = ctx.programs().get("probe", kProbe, kBuildOptions); }
};

}  // namespace

TEST(KernelBinding, ValuesLandWhereTheListPutsThem) {
  Probe p;
  ClBoundKernel k(p.ctx, p.program, "probe");
  ClTensor x(p.ctx, TensorDesc{Shape{1, 3, 2, 5}, StorageFormat{}});
  std::vector<float> xs(30, 0.0f);
  xs[0] = 0.5f;
  x.upload(xs);
  // 6 float2 = 48 bytes; the region starts 16 bytes in, element 2 of float2.
  ClMem buf = p.ctx.createBuffer(48);
  std::vector<float> init(12, -1.0f);
  p.ctx.writeBuffer(buf.get(), init.data(), 48);
  KernelArgs a;
  a.i32("n", 7).u32("u", 9).f32("s", 2.5f).tensor("x", x).region("out", {buf.get(), 16});
  k.run(a, Launch::cover(1, {1, 1, 1}, {1, 1, 1}));
  std::vector<float> out(12);
  p.ctx.readBuffer(buf.get(), out.data(), 48);
  const std::vector<float> want = {-1, -1, -1, -1, 7, 2.5f, 9, 0.5f + 3000 + 100 + 5, -1, -1, -1, -1};
  EXPECT_EQ(out, want);
}

TEST(KernelBinding, MissingExtraAndMistypedArgumentsAreNamed) {
  Probe p;
  ClBoundKernel k(p.ctx, p.program, "probe");
  ClTensor x(p.ctx, TensorDesc{Shape{1, 4, 1, 1}, StorageFormat{}});
  ClMem buf = p.ctx.createBuffer(64);
  auto full = [&] {
    KernelArgs a;
    a.i32("n", 1).u32("u", 2).f32("s", 3).tensor("x", x).region("out", {buf.get(), 0});
    return a;
  };
  EXPECT_NE(errorMessage([&] {
              KernelArgs a;
              a.i32("n", 1).f32("s", 3).tensor("x", x).region("out", {buf.get(), 0});
              k.bind(a);
            }).find("kernel probe: argument 'u' (const uint u) was not set"),
            std::string::npos);
  EXPECT_NE(errorMessage([&] { k.bind(full().i32("m", 4)); }).find("kernel probe declares no argument 'm'"),
            std::string::npos);
  EXPECT_NE(errorMessage([&] {
              KernelArgs a;
              a.f32("n", 1).u32("u", 2).f32("s", 3).tensor("x", x).region("out", {buf.get(), 0});
              k.bind(a);
            }).find("argument 'n' is declared 'const int n' but was given a float"),
            std::string::npos);
  EXPECT_NE(errorMessage([&] {
              KernelArgs a;
              a.i32("n", 1).u32("u", 2).f32("s", 3).tensor("x", x).region("out", {buf.get(), 4});
              k.bind(a);
            }).find("not a 32-bit element offset of 8-byte elements"),
            std::string::npos);
  EXPECT_NE(errorMessage([&] { full().i32("n", 2); }).find("'n' is set twice"), std::string::npos);
  // Arguments an op's kernels share may go unused by one of them; what it declares may not.
  EXPECT_NO_THROW(k.bind(full().i32("m", 4).shared()));
  EXPECT_NE(errorMessage([&] {
              KernelArgs a;
              a.i32("n", 1).f32("s", 3).tensor("x", x).region("out", {buf.get(), 0});
              k.bind(a.shared());
            }).find("'u'"),
            std::string::npos);
}
