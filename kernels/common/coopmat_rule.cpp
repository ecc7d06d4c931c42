#include "kernels/common/coopmat_rule.h"

namespace sdspeed {

std::string coopMatF16DeviceRule(const std::string& what, const std::string& variant, uint32_t m, uint32_t n,
                                 uint32_t k, const DeviceCaps& dev) {
  // OpenCL has no cooperative matrices: the variants are Vulkan's alone.
  if (dev.api != "vulkan") return what + " has no " + dev.api + " kernels (cooperative matrices are Vulkan's)";
  if (!dev.cooperativeMatrix) return "device lacks cooperative matrices";
  // The shaders' types: NV, A = B = f16, C = D = f32, subgroup scope.
  const CoopMatShape want{"NV", m, n, k, "f16", "f16", "f32", "f32", "subgroup"};
  bool listed = false;
  for (const CoopMatShape& s : dev.coopMat)
    listed |= s.extension == want.extension && s.m == want.m && s.n == want.n && s.k == want.k && s.a == want.a &&
              s.b == want.b && s.c == want.c && s.result == want.result && s.scope == want.scope;
  if (!listed) return "device lacks cooperative-matrix shape " + want.text();
  if (dev.subgroupSize != 32u)
    return variant + " assumes 32-invocation subgroups, device has " + std::to_string(dev.subgroupSize);
  return {};
}

}  // namespace sdspeed
