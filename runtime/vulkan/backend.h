// Vulkan's Backend (runtime/backend.h): the instance, one logical device, the on-disk
// pipeline cache and the pipelines made in this process, tensors in storage buffers,
// and one OpRecorder that an op records its dispatches into.
//
// Submission is deferred (OpRecorder::setDeferred): ops record their dispatches into one
// command buffer, which flush()/finish(), a host transfer, a freed buffer, reading an
// event's time or a full batch (1024 dispatches) submits and waits for. So a graph run
// pays one queue submission per batch, not one per op; events carry their batch and
// read their timestamps once it has run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/dispatch.h"
#include "runtime/vulkan/pipeline.h"
#include "runtime/vulkan/pipeline_cache.h"

namespace sdspeed::vk {

// A tensor in its own storage buffer (buffer storage only: image2d storage is declared
// unsupported on Vulkan through DeviceCaps::imageSupport = false).
class VkTensor : public DeviceTensor {
 public:
  VkTensor(Device& device, const TensorDesc& desc, bool withCanary);
  // A tensor in a buffer someone else made (the executor's arena, or another tensor's
  // memory seen with another shape), offsetBytes into it.
  VkTensor(Device& device, const TensorDesc& desc, std::shared_ptr<Buffer> buffer, uint64_t offsetBytes);
  const Buffer& buffer() const { return *buffer_; }
  const std::shared_ptr<Buffer>& sharedBuffer() const { return buffer_; }
  // What a shader binds: the tensor's bytes (and canary) from its offset.
  BufferRange range() const;

 protected:
  void writePhysical(std::span<const uint8_t> bytes) override;
  std::vector<uint8_t> readPhysical() const override;
  void writeTail(const std::vector<uint8_t>& bytes) override;
  std::vector<uint8_t> readTail(size_t n) const override;

 private:
  Device& device_;
  std::shared_ptr<Buffer> buffer_;
};

// The Vulkan tensor behind `t`; throws Error for another backend's tensor.
const VkTensor& asVk(const DeviceTensor& t);

// One dispatch's timestamps, already read when the op's submission finished.
class VkEvent : public DeviceEvent {
 public:
  VkEvent(uint64_t startNs, uint64_t endNs) : start_(startNs), end_(endNs) {}
  // A dispatch of a deferred batch: its times are read (the batch run first) when asked.
  VkEvent(std::shared_ptr<DispatchBatch> batch, uint32_t index) : batch_(std::move(batch)), index_(index) {}
  void wait() const override {
    if (batch_) batch_->at(index_);
  }
  // A side recorded without its timestamp (Backend::beginSpanOnly) reads UINT64_MAX as its
  // start and 0 as its end: the span's min and max pass over it.
  uint64_t startNs() const override { return batch_ ? batch_->at(index_).spanStartNs() : start_; }
  uint64_t endNs() const override { return batch_ ? batch_->at(index_).spanEndNs() : end_; }

 private:
  uint64_t start_ = 0, end_ = 0;
  std::shared_ptr<DispatchBatch> batch_;
  uint32_t index_ = 0;
};
OpEvents eventsOf(const OpTiming& timing);

class VulkanBackend : public Backend {
 public:
  // selector as `--device vulkan:N` takes it (device_info.h, selectVulkanDevice); cacheDir
  // empty: no on-disk pipeline cache. Throws Error naming the problem when there is no
  // Vulkan driver or no such device.
  VulkanBackend(const std::string& selector, const std::string& cacheDir);
  ~VulkanBackend() override;

  const DeviceCaps& caps() const override { return caps_; }
  std::string deviceKey() const override { return device_->info().key(); }
  std::unique_ptr<DeviceTensor> makeTensor(const TensorDesc& desc, bool withCanary = false) override;
  void flush() override { recorder_->flush(); }
  void finish() override { recorder_->flush(); }
  // Timestamps only at the span's first start and last end; a barrier only before a
  // dispatch that shares a written range with one since the last barrier
  // (DispatchSync::hazardsOnly). For A/B runs: SDSPEED_VK_BARRIER_EVERY_DISPATCH=1 keeps a
  // barrier before every dispatch; SDSPEED_VK_STAMP_EVERY_DISPATCH=1 records as ops do
  // outside a span (a barrier and a timestamp pair on every dispatch).
  void beginSpanOnly() override;
  void endSpanOnly() override;
  SyncCounts syncCounts() const override { return {recorder_->dispatchesRecorded(), recorder_->barriersRecorded()}; }
  std::string describe() const override;
  std::string apiVersion() const override { return "Vulkan " + info().apiVersionText(); }
  std::string buildSummary() const override;
  std::string dumpKernels(const std::string& dir) const override;
  uint64_t subBufferAlignment() const override;
  std::unique_ptr<DeviceArena> makeArena(uint64_t bytes, bool subBuffers) override;
  std::unique_ptr<DeviceTensor> makeView(const DeviceTensor& base, const TensorDesc& desc) override;

  Device& device() { return *device_; }
  const VulkanDeviceInfo& info() const { return device_->info(); }
  Instance& instance() { return *instance_; }
  PipelineCache* pipelineCache() { return cache_.get(); }
  // The pipeline of a shader with these buffers, push-constant bytes and specialization
  // constants: made once per process (through the on-disk cache), then shared.
  // Under a DescribeOnly: checked as for a real one but not built (see below).
  const ComputePipeline& pipeline(const SpirvShader& shader, uint32_t storageBuffers, uint32_t pushBytes,
                                  const std::vector<SpecConstant>& spec);
  // Pipelines built so far (described-only ones not counted).
  size_t pipelinesBuilt() const { return pipelines_.size(); }
  // While one lives, pipeline() builds nothing new: it returns a described-only pipeline
  // (layout checked, no shader module, no driver compile). A family's lowering then runs
  // all its own checks, so loweringGap (kernels/lowering.h) learns whether a point lowers,
  // with the lowering's own messages, without building pipelines for variants the executor
  // then does not choose. Ops prepared meanwhile are for asking only: never enqueue them.
  class DescribeOnly {
   public:
    explicit DescribeOnly(VulkanBackend& be) : be_(be), was_(be.describeOnly_) { be.describeOnly_ = true; }
    ~DescribeOnly() { be_.describeOnly_ = was_; }
    DescribeOnly(const DescribeOnly&) = delete;
    DescribeOnly& operator=(const DescribeOnly&) = delete;

   private:
    VulkanBackend& be_;
    bool was_;
  };
  // The recorder ops record into (one op at a time: submission is synchronous).
  OpRecorder& recorder() { return *recorder_; }

 private:
  std::shared_ptr<Instance> instance_;
  std::unique_ptr<Device> device_;
  DeviceCaps caps_;
  std::unique_ptr<PipelineCache> cache_;
  std::map<std::string, std::unique_ptr<ComputePipeline>> pipelines_;
  std::map<std::string, std::unique_ptr<ComputePipeline>> described_;  // DescribeOnly's, never run
  bool describeOnly_ = false;
  std::unique_ptr<OpRecorder> recorder_;
};

}  // namespace sdspeed::vk
