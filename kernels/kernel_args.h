// A kernel's arguments by name (TFLite GPU's `args_.AddInt("tiles_x")` idea): a family
// says what each argument is called and holds, never at which index it sits. Each
// backend maps the names onto its own binding: the OpenCL lowering onto argument indices
// read from the kernel's declared signature (runtime/opencl/kernel_signature.h), a Vulkan
// lowering onto descriptor bindings and push-constant offsets. Binding checks both ways:
// a kernel argument nobody set, a name the kernel does not declare and a value of the
// wrong kind are errors naming the kernel and the argument, where a positional slip
// would have been a silent wrong answer.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "kernels/launch.h"

namespace sdspeed {

class DeviceTensor;
struct TensorSlot;

class KernelArgs {
 public:
  // Tensor `name` (the kernel's `name_PARAMS`: memory object, dimensions, offset).
  KernelArgs& tensor(const std::string& name, const DeviceTensor& t);
  // The tensor's address is kept until the kernel is bound: never a temporary's.
  KernelArgs& tensor(const std::string& name, const DeviceTensor&& t) = delete;
  // Every slot's tensor under the slot's name, in slot order; a kernel need not read
  // them all (an op's kernels each take some of its slots), so these may go unused.
  KernelArgs& slotTensors(const std::vector<TensorSlot>& slots, const std::vector<DeviceTensor*>& tensors);
  // A region of a buffer (SD_REGION(T, name)); the element size comes from T.
  KernelArgs& region(const std::string& name, const BufferRegion& r);
  // A whole buffer (`__global T* name`).
  KernelArgs& buffer(const std::string& name, const BufferRegion& r);
  KernelArgs& i32(const std::string& name, int32_t v);
  KernelArgs& u32(const std::string& name, uint32_t v);
  KernelArgs& f32(const std::string& name, float v);

  // A copy whose values may each go unused: the arguments an op's kernels share, each
  // kernel taking those it declares (what it declares must still all be there).
  KernelArgs shared() const {
    KernelArgs c = *this;
    for (auto& v : c.values_) v.mayBeUnused = true;
    return c;
  }

  enum class Kind { Tensor, Region, Buffer, I32, U32, F32 };
  struct Value {
    std::string name;
    Kind kind;
    std::variant<const DeviceTensor*, BufferRegion, int32_t, uint32_t, float> value;
    bool mayBeUnused = false;
  };
  const std::vector<Value>& values() const { return values_; }
  const Value* find(const std::string& name) const;

 private:
  KernelArgs& add(Value v);
  std::vector<Value> values_;
};

const char* kindName(KernelArgs::Kind k);

}  // namespace sdspeed
