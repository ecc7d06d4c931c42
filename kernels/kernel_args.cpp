#include "kernels/kernel_args.h"

#include "kernels/family.h"
#include "runtime/error.h"

namespace sdspeed {

const char* kindName(KernelArgs::Kind k) {
  switch (k) {
    case KernelArgs::Kind::Tensor: return "tensor";
    case KernelArgs::Kind::Region: return "buffer region";
    case KernelArgs::Kind::Buffer: return "buffer";
    case KernelArgs::Kind::I32: return "int";
    case KernelArgs::Kind::U32: return "uint";
    case KernelArgs::Kind::F32: return "float";
  }
  return "?";
}

const KernelArgs::Value* KernelArgs::find(const std::string& name) const {
  for (const auto& v : values_)
    if (v.name == name) return &v;
  return nullptr;
}

KernelArgs& KernelArgs::add(Value v) {
  if (find(v.name)) throw Error("kernel argument '" + v.name + "' is set twice");
  values_.push_back(std::move(v));
  return *this;
}

KernelArgs& KernelArgs::tensor(const std::string& name, const DeviceTensor& t) {
  return add({name, Kind::Tensor, &t});
}

KernelArgs& KernelArgs::slotTensors(const std::vector<TensorSlot>& slots, const std::vector<DeviceTensor*>& tensors) {
  if (slots.size() != tensors.size())
    throw Error("an op with " + std::to_string(slots.size()) + " tensor slots was given " +
                std::to_string(tensors.size()) + " tensors");
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!tensors[i]) throw Error("no tensor for slot '" + slots[i].name + "'");
    add({slots[i].name, Kind::Tensor, tensors[i], true});
  }
  return *this;
}

KernelArgs& KernelArgs::region(const std::string& name, const BufferRegion& r) {
  if (!r.mem) throw Error("kernel argument '" + name + "': a buffer region without memory");
  return add({name, Kind::Region, r});
}

KernelArgs& KernelArgs::buffer(const std::string& name, const BufferRegion& r) {
  if (!r.mem) throw Error("kernel argument '" + name + "': a buffer without memory");
  if (r.offset != 0) throw Error("kernel argument '" + name + "': a whole buffer cannot start at an offset");
  return add({name, Kind::Buffer, r});
}

KernelArgs& KernelArgs::i32(const std::string& name, int32_t v) { return add({name, Kind::I32, v}); }
KernelArgs& KernelArgs::u32(const std::string& name, uint32_t v) { return add({name, Kind::U32, v}); }
KernelArgs& KernelArgs::f32(const std::string& name, float v) { return add({name, Kind::F32, v}); }

}  // namespace sdspeed
