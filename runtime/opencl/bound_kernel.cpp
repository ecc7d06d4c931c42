#include "runtime/opencl/bound_kernel.h"

#include <limits>
#include <set>
#include <sstream>

#include "kernels/family.h"
#include "runtime/opencl/cl_error.h"
#include "runtime/opencl/tensor.h"

namespace sdspeed {
namespace {

using Kind = KernelArgs::Kind;

Kind expectedKind(ClKernelParam::Kind k) {
  switch (k) {
    case ClKernelParam::Kind::Tensor: return Kind::Tensor;
    case ClKernelParam::Kind::Region: return Kind::Region;
    case ClKernelParam::Kind::Buffer: return Kind::Buffer;
    case ClKernelParam::Kind::Int: return Kind::I32;
    case ClKernelParam::Kind::Uint: return Kind::U32;
    case ClKernelParam::Kind::Float: return Kind::F32;
  }
  return Kind::I32;
}

template <typename T>
void set(cl_kernel k, int index, const T& v) {
  clCheck(clSetKernelArg(k, static_cast<cl_uint>(index), sizeof(T), &v), "clSetKernelArg");
}

}  // namespace

ClBoundKernel::ClBoundKernel(Context& ctx, const ClBuiltProgram& program, const std::string& name)
    : ctx_(&ctx), kernel_(ctx.createKernel(program.handle, name)), sig_(parseKernelSignature(program.source, name)) {}

void ClBoundKernel::bind(const KernelArgs& args) {
  const std::string& kn = sig_.kernel;
  std::set<std::string> used;
  int index = 0;
  cl_kernel k = kernel_.get();
  for (const auto& p : sig_.params) {
    const KernelArgs::Value* v = args.find(p.name);
    if (!v) throw Error("kernel " + kn + ": argument '" + p.name + "' (" + p.declared + ") was not set");
    if (v->kind != expectedKind(p.kind))
      throw Error("kernel " + kn + ": argument '" + p.name + "' is declared '" + p.declared + "' but was given a " +
                  kindName(v->kind));
    used.insert(p.name);
    switch (p.kind) {
      case ClKernelParam::Kind::Tensor:
        index = asCl(*std::get<const DeviceTensor*>(v->value)).setArgs(k, index);
        break;
      case ClKernelParam::Kind::Region: {
        const auto& r = std::get<BufferRegion>(v->value);
        if (r.offset % p.elementBytes != 0 || r.offset / p.elementBytes > std::numeric_limits<cl_uint>::max())
          throw Error("kernel " + kn + ": region '" + p.name + "' at byte offset " + std::to_string(r.offset) +
                      " is not a 32-bit element offset of " + std::to_string(p.elementBytes) + "-byte elements");
        set(k, index++, static_cast<cl_mem>(r.mem));
        set(k, index++, static_cast<cl_uint>(r.offset / p.elementBytes));
        break;
      }
      case ClKernelParam::Kind::Buffer: set(k, index++, static_cast<cl_mem>(std::get<BufferRegion>(v->value).mem)); break;
      case ClKernelParam::Kind::Int: set(k, index++, static_cast<cl_int>(std::get<int32_t>(v->value))); break;
      case ClKernelParam::Kind::Uint: set(k, index++, static_cast<cl_uint>(std::get<uint32_t>(v->value))); break;
      case ClKernelParam::Kind::Float: set(k, index++, static_cast<cl_float>(std::get<float>(v->value))); break;
    }
  }
  for (const auto& v : args.values())
    if (!v.mayBeUnused && !used.count(v.name))
      throw Error("kernel " + kn + " declares no argument '" + v.name + "'");
}

void ClBoundKernel::checkLimits() {
  if (checkedLimits_ || !kernel_) return;
  checkKernelLimits(*ctx_, kernel_.get());
  checkedLimits_ = true;
}

EventPtr ClBoundKernel::launch(const Launch& l) {
  checkLimits();
  return clEvent(enqueueLaunch(ctx_->queue(), kernel_.get(), l));
}

void checkKernelLimits(const Context& ctx, cl_kernel kernel) {
  // Local memory only. CL_KERNEL_WORK_GROUP_SIZE is not checked before launching (nor
  // queried here): NVIDIA's driver (580, H200) reports 256 for kernels that run at
  // reqd_work_group_size 1024. A launch the device refuses for its work-group size is
  // mapped to UnsupportedError instead (enqueueLaunch).
  cl_ulong localMem = 0;
  clCheck(clGetKernelWorkGroupInfo(kernel, ctx.device().id, CL_KERNEL_LOCAL_MEM_SIZE, sizeof(localMem), &localMem,
                                   nullptr),
          "clGetKernelWorkGroupInfo");
  if (localMem > ctx.device().localMemBytes)
    throw UnsupportedError("kernel needs " + std::to_string(localMem) + " bytes of local memory, device has " +
                           std::to_string(ctx.device().localMemBytes));
}

ClEvent enqueueLaunch(cl_command_queue q, cl_kernel kernel, const Launch& l) {
  cl_event ev = nullptr;
  cl_int err = clEnqueueNDRangeKernel(q, kernel, static_cast<cl_uint>(l.dims), nullptr, l.global, l.local, 0,
                                      nullptr, &ev);
  if (err == CL_INVALID_WORK_GROUP_SIZE) {
    size_t maxWg = 0;
    cl_device_id dev = nullptr;
    clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof(dev), &dev, nullptr);
    clGetKernelWorkGroupInfo(kernel, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(maxWg), &maxWg, nullptr);
    throw UnsupportedError("the device refuses a work-group of " + std::to_string(l.workGroupSize()) +
                           " for this kernel (CL_INVALID_WORK_GROUP_SIZE; it reports a limit of " +
                           std::to_string(maxWg) + ")");
  }
  if (err != CL_SUCCESS) {
    std::ostringstream d;
    d << "global " << l.global[0] << "x" << l.global[1] << "x" << l.global[2] << ", local " << l.local[0] << "x"
      << l.local[1] << "x" << l.local[2];
    throw ClError("clEnqueueNDRangeKernel", err, d.str());
  }
  return ClEvent(ev);
}

}  // namespace sdspeed
