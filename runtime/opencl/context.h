// OpenCL's Backend (runtime/backend.h). One device in use: its OpenCL context, a profiling command queue, the program
// cache and the kernel sources. Memory helpers turn every failure into ClError
// naming the call.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/backend.h"
#include "runtime/opencl/cl_handle.h"
#include "runtime/opencl/device.h"
#include "runtime/opencl/kernel_sources.h"
#include "runtime/opencl/program_cache.h"

namespace sdspeed {

struct ContextOptions {
  std::string kernelDir;  // empty: embedded sources
  std::string cacheDir = ProgramCache::defaultCacheDir();  // empty: no disk cache
};

class Context : public Backend {
 public:
  explicit Context(const DeviceInfo& device, const ContextOptions& options = {});

  const DeviceInfo& device() const { return device_; }
  const DeviceCaps& caps() const override { return device_; }
  std::string deviceKey() const override { return device_.key(); }
  std::unique_ptr<DeviceTensor> makeTensor(const TensorDesc& desc, bool withCanary = false) override;
  void flush() override;
  std::string describe() const override;
  std::string apiVersion() const override { return device_.openclVersion; }
  std::string buildSummary() const override;
  std::string dumpKernels(const std::string& dir) const override;
  cl_context handle() const { return context_.get(); }
  cl_command_queue queue() const { return queue_.get(); }
  // A second in-order queue on the same device for uploads that overlap the kernels
  // of queue() (weight streaming); made on first use.
  cl_command_queue copyQueue();
  ProgramCache& programs() { return *programs_; }
  const KernelSources& sources() const { return sources_; }

  ClKernel createKernel(cl_program program, const std::string& name);
  ClMem createBuffer(size_t bytes, cl_mem_flags flags = CL_MEM_READ_WRITE);
  // RGBA image of float (CL_FLOAT) or half (CL_HALF_FLOAT) channels.
  ClMem createImage2D(size_t width, size_t height, cl_channel_type type,
                      cl_mem_flags flags = CL_MEM_READ_WRITE);

  // A region of `parent` (a buffer): offset must be a multiple of subBufferAlignment().
  ClMem createSubBuffer(cl_mem parent, size_t offset, size_t bytes, cl_mem_flags flags = CL_MEM_READ_WRITE);
  // subBufferAlignment(): CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes (the device reports bits).

  // Every buffer and image this context allocated is counted in the backend's
  // MemoryTracker (released objects are subtracted through
  // clSetMemObjectDestructorCallback).
  using MemoryStats = sdspeed::MemoryStats;
  using PeakWindow = sdspeed::PeakWindow;
  // Host memory the device copies from at the bus's full speed: a CL_MEM_ALLOC_HOST_PTR
  // buffer, mapped once for the object's life. Drivers back such buffers with
  // page-locked host memory (NVIDIA's and AMD's OpenCL guides give this as the way to
  // pinned transfers), so clEnqueueWriteBuffer from data() is a DMA that can overlap
  // kernels instead of a copy through the driver's own bounce buffers; on a phone's
  // unified memory it is ordinary shared DRAM. Counted as device memory: on the H200
  // NVIDIA's driver backs each such buffer with as much device memory as well
  // (nvidia-smi's memory.used grew by the staged bytes, results/memory/README.md), and
  // on unified memory it is the GPU's DRAM anyway.
  class HostStaging {
   public:
    HostStaging(Context& ctx, size_t bytes);
    ~HostStaging();
    HostStaging(const HostStaging&) = delete;
    HostStaging& operator=(const HostStaging&) = delete;
    uint8_t* data() const { return ptr_; }
    size_t size() const { return bytes_; }

   private:
    Context& ctx_;
    ClMem mem_;
    uint8_t* ptr_ = nullptr;
    size_t bytes_ = 0;
  };

  void writeBuffer(cl_mem buf, const void* data, size_t bytes, size_t offset = 0);
  void readBuffer(cl_mem buf, void* data, size_t bytes, size_t offset = 0);
  void writeImage(cl_mem img, const void* data, size_t width, size_t height);
  void readImage(cl_mem img, void* data, size_t width, size_t height);
  void finish() override;
  // finish() after a marker command: a driver may hold the objects its last commands
  // used until a later command replaces them (PoCL keeps the queue's last event and
  // its buffers), so freed memory leaves the live count only after this.
  void settle() override;
  uint64_t subBufferAlignment() const override;
  std::unique_ptr<DeviceArena> makeArena(uint64_t bytes, bool subBuffers) override;
  std::unique_ptr<DeviceTensor> makeView(const DeviceTensor& base, const TensorDesc& desc) override;

 private:
  DeviceInfo device_;
  KernelSources sources_;
  ClContext context_;
  ClQueue queue_;
  ClQueue copyQueue_;
  std::unique_ptr<ProgramCache> programs_;
  void track(cl_mem m, size_t bytes);
};

}  // namespace sdspeed
