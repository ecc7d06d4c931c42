#include "runtime/opencl/context.h"
#include "runtime/opencl/tensor.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <map>
#include <mutex>

#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {

Context::Context(const DeviceInfo& device, const ContextOptions& options)
    : device_(device), sources_(options.kernelDir.empty() ? KernelSources() : KernelSources(options.kernelDir)) {
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(device_.platform), 0};
  context_ = ClContext(clCreateContext(props, 1, &device_.id, nullptr, nullptr, &err));
  clCheck(err, "clCreateContext");
  // clCreateCommandQueue is deprecated in 2.0 but is the one entry point every
  // driver we target (PoCL, NVIDIA, Adreno 1.2-3.0) accepts.
  queue_ = ClQueue(clCreateCommandQueue(context_.get(), device_.id, CL_QUEUE_PROFILING_ENABLE, &err));
  clCheck(err, "clCreateCommandQueue");
  programs_ = std::make_unique<ProgramCache>(context_.get(), device_, options.cacheDir);
}

ClKernel Context::createKernel(cl_program program, const std::string& name) {
  cl_int err = CL_SUCCESS;
  ClKernel k(clCreateKernel(program, name.c_str(), &err));
  if (err != CL_SUCCESS) throw ClError("clCreateKernel", err, "kernel '" + name + "'");
  return k;
}

namespace {

// What a destructor callback needs; `keep` holds the tracker alive until the last
// tracked object is released, even past the Context.
struct Release {
  std::shared_ptr<MemoryTracker> keep;
  uint64_t bytes = 0;
};

// The arena of the graph executor: one buffer; tensors are sub-buffers of it, or the
// buffer itself (retained) with an offset.
class ClArena : public DeviceArena {
 public:
  ClArena(Context& ctx, uint64_t bytes, bool subBuffers)
      : ctx_(ctx), mem_(ctx.createBuffer(std::max<uint64_t>(bytes, 4))), bytes_(bytes), subBuffers_(subBuffers) {}
  uint64_t bytes() const override { return bytes_; }
  void* handle() const override { return mem_.get(); }
  std::unique_ptr<DeviceTensor> tensorAt(uint64_t offset, const TensorDesc& desc) override {
    if (subBuffers_) return std::make_unique<ClTensor>(ctx_, desc, ctx_.createSubBuffer(mem_.get(), offset, desc.bytes()), 0);
    clCheck(clRetainMemObject(mem_.get()), "clRetainMemObject");
    return std::make_unique<ClTensor>(ctx_, desc, ClMem(mem_.get()), offset);
  }

 private:
  Context& ctx_;
  ClMem mem_;
  uint64_t bytes_;
  bool subBuffers_;
};

}  // namespace

void Context::track(cl_mem m, size_t bytes) {
  tracker_->allocated(bytes);
  auto* r = new Release{tracker_, bytes};
  auto callback = [](cl_mem, void* data) {
    auto* rel = static_cast<Release*>(data);
    rel->keep->released(rel->bytes);
    delete rel;
  };
  if (clSetMemObjectDestructorCallback(m, callback, r) != CL_SUCCESS) {
    // Not tracked past its release: count it as live (an overestimate, never an under-).
    delete r;
  }
}

std::unique_ptr<DeviceArena> Context::makeArena(uint64_t bytes, bool subBuffers) {
  return std::make_unique<ClArena>(*this, bytes, subBuffers);
}

std::unique_ptr<DeviceTensor> Context::makeView(const DeviceTensor& base, const TensorDesc& desc) {
  const ClTensor& b = asCl(base);
  clCheck(clRetainMemObject(b.mem()), "clRetainMemObject");
  return std::make_unique<ClTensor>(*this, desc, ClMem(b.mem()), b.offsetBytes());
}

ClMem Context::createBuffer(size_t bytes, cl_mem_flags flags) {
  cl_int err = CL_SUCCESS;
  const size_t size = bytes == 0 ? 4 : bytes;
  ClMem m(clCreateBuffer(context_.get(), flags, size, nullptr, &err));
  if (err != CL_SUCCESS)
    throw ClError("clCreateBuffer", err, "allocating " + std::to_string(bytes) + " bytes");
  track(m.get(), size);
  return m;
}

ClMem Context::createSubBuffer(cl_mem parent, size_t offset, size_t bytes, cl_mem_flags flags) {
  cl_buffer_region region{offset, bytes == 0 ? 4 : bytes};
  cl_int err = CL_SUCCESS;
  ClMem m(clCreateSubBuffer(parent, flags, CL_BUFFER_CREATE_TYPE_REGION, &region, &err));
  if (err != CL_SUCCESS)
    throw ClError("clCreateSubBuffer", err,
                  "region of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset));
  return m;  // no new memory: not tracked
}

uint64_t Context::subBufferAlignment() const {
  cl_uint bits = 0;
  clCheck(clGetDeviceInfo(device_.id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(bits), &bits, nullptr),
          "clGetDeviceInfo(CL_DEVICE_MEM_BASE_ADDR_ALIGN)");
  return std::max<uint64_t>(bits / 8, 4);
}

ClMem Context::createImage2D(size_t width, size_t height, cl_channel_type type, cl_mem_flags flags) {
  cl_image_format fmt{CL_RGBA, type};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = width;
  desc.image_height = height;
  cl_int err = CL_SUCCESS;
  ClMem m(clCreateImage(context_.get(), flags, &fmt, &desc, nullptr, &err));
  if (err != CL_SUCCESS)
    throw ClError("clCreateImage", err,
                  "image2d " + std::to_string(width) + "x" + std::to_string(height));
  track(m.get(), width * height * 4 * (type == CL_FLOAT ? 4 : 2));
  return m;
}

void Context::writeBuffer(cl_mem buf, const void* data, size_t bytes, size_t offset) {
  clCheck(clEnqueueWriteBuffer(queue_.get(), buf, CL_TRUE, offset, bytes, data, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
}

void Context::readBuffer(cl_mem buf, void* data, size_t bytes, size_t offset) {
  clCheck(clEnqueueReadBuffer(queue_.get(), buf, CL_TRUE, offset, bytes, data, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
}

void Context::writeImage(cl_mem img, const void* data, size_t width, size_t height) {
  size_t origin[3] = {0, 0, 0}, region[3] = {width, height, 1};
  clCheck(clEnqueueWriteImage(queue_.get(), img, CL_TRUE, origin, region, 0, 0, data, 0, nullptr,
                              nullptr),
          "clEnqueueWriteImage");
}

void Context::readImage(cl_mem img, void* data, size_t width, size_t height) {
  size_t origin[3] = {0, 0, 0}, region[3] = {width, height, 1};
  clCheck(clEnqueueReadImage(queue_.get(), img, CL_TRUE, origin, region, 0, 0, data, 0, nullptr,
                             nullptr),
          "clEnqueueReadImage");
}

Context::HostStaging::HostStaging(Context& ctx, size_t bytes) : ctx_(ctx), bytes_(bytes) {
  cl_int err = CL_SUCCESS;
  mem_ = ClMem(clCreateBuffer(ctx.handle(), CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, std::max<size_t>(bytes, 4), nullptr, &err));
  if (err != CL_SUCCESS)
    throw ClError("clCreateBuffer", err, "allocating " + std::to_string(bytes) + " bytes of pinned host staging");
  ctx.track(mem_.get(), std::max<size_t>(bytes, 4));
  void* p = clEnqueueMapBuffer(ctx.queue(), mem_.get(), CL_TRUE, CL_MAP_WRITE | CL_MAP_READ, 0, std::max<size_t>(bytes, 4), 0,
                               nullptr, nullptr, &err);
  if (err != CL_SUCCESS) throw ClError("clEnqueueMapBuffer", err, "mapping " + std::to_string(bytes) + " bytes of host staging");
  ptr_ = static_cast<uint8_t*>(p);
}

Context::HostStaging::~HostStaging() {
  // Copies reading it must be done: callers finish their queues first (the executor's
  // destructor does). Errors here cannot be reported from a destructor.
  if (ptr_ && clEnqueueUnmapMemObject(ctx_.queue(), mem_.get(), ptr_, 0, nullptr, nullptr) == CL_SUCCESS)
    clFinish(ctx_.queue());
}

cl_command_queue Context::copyQueue() {
  if (!copyQueue_) {
    cl_int err = CL_SUCCESS;
    copyQueue_ = ClQueue(clCreateCommandQueue(context_.get(), device_.id, CL_QUEUE_PROFILING_ENABLE, &err));
    clCheck(err, "clCreateCommandQueue (copy queue)");
  }
  return copyQueue_.get();
}

std::unique_ptr<DeviceTensor> Context::makeTensor(const TensorDesc& desc, bool withCanary) {
  return std::make_unique<ClTensor>(*this, desc, withCanary);
}

void Context::flush() { clCheck(clFlush(queue()), "clFlush"); }

std::string Context::describe() const {
  return device_.name + " (" + device_.index() + ", " + device_.driverVersion + ", " + device_.openclVersion + ")";
}

std::string Context::buildSummary() const {
  const auto st = programs_->stats();
  return "programs: " + std::to_string(st.builds) + " built, " + std::to_string(st.diskHits) + " from disk cache, " +
         std::to_string(st.memoryHits) + " reused";
}

std::string Context::dumpKernels(const std::string& dir) const {
  const auto records = programs_->records();
  for (const auto& rec : records) {
    std::string name;
    for (char c : rec.label) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=') ? c : '_';
    std::string text = "// build options: " + rec.options + "\n// cache key: " + rec.key + "\n" + rec.source;
    writeFileAtomically(dir + "/" + name + "-" + rec.key + ".cl", text);
  }
  return "wrote " + std::to_string(records.size()) + " programs to " + dir;
}

void Context::finish() {
  clCheck(clFinish(queue_.get()), "clFinish");
  if (copyQueue_) clCheck(clFinish(copyQueue_.get()), "clFinish (copy queue)");
}

void Context::settle() {
  cl_event marker = nullptr;
  clCheck(clEnqueueMarkerWithWaitList(queue_.get(), 0, nullptr, &marker), "clEnqueueMarkerWithWaitList");
  const cl_int err = clWaitForEvents(1, &marker);
  clReleaseEvent(marker);
  clCheck(err, "clWaitForEvents");
  finish();
}

}  // namespace sdspeed
