#include "kernels/registry.h"

#include "kernels/activation/activation_family.h"
#include "kernels/attention/attention_family.h"
#include "kernels/binary/binary_family.h"
#include "kernels/concat/concat_family.h"
#include "kernels/conv/conv_family.h"
#include "kernels/embedding/embedding_family.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/groupnorm/groupnorm_family.h"
#include "kernels/layernorm/layernorm_family.h"
#include "kernels/reshape/reshape_family.h"
#include "kernels/softmax/softmax_family.h"
#include "kernels/timestep/timestep_family.h"
#include "kernels/upsample/upsample_family.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {

const std::vector<std::unique_ptr<Family>>& allFamilies() {
  static const std::vector<std::unique_ptr<Family>> families = [] {
    std::vector<std::unique_ptr<Family>> f;
    f.push_back(std::make_unique<GroupNormFamily>());
    f.push_back(std::make_unique<LayerNormFamily>());
    f.push_back(std::make_unique<SoftmaxFamily>());
    f.push_back(std::make_unique<ActivationFamily>());
    f.push_back(std::make_unique<AttentionFamily>());
    // The elementwise helpers of the pipeline (kernels/common/elementwise.h).
    f.push_back(std::make_unique<BinaryFamily>());
    f.push_back(std::make_unique<UpsampleFamily>());
    f.push_back(std::make_unique<ConcatFamily>());
    f.push_back(std::make_unique<ReshapeFamily>());
    f.push_back(std::make_unique<EmbeddingFamily>());
    f.push_back(std::make_unique<TimestepFamily>());
    f.push_back(std::make_unique<ConvFamily>());
    f.push_back(std::make_unique<GemmFamily>());
    return f;
  }();
  return families;
}

const Family& findFamily(const std::string& name) {
  std::string known;
  for (const auto& f : allFamilies()) {
    if (f->name() == name) return *f;
    known += (known.empty() ? "" : ", ") + f->name();
  }
  throw Error("unknown op '" + name + "' (known: " + known + ")");
}

}  // namespace sdspeed
