#include "runtime/vulkan/dispatch.h"

#include <algorithm>
#include <string>

#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/pipeline.h"
#include "runtime/vulkan/spirv.h"
#include "runtime/vulkan/vk_error.h"

namespace sdspeed::vk {

double OpTiming::spanNs() const {
  if (dispatches.empty()) return 0;
  uint64_t first = UINT64_MAX, last = 0;
  for (const auto& t : dispatches) {
    first = std::min(first, t.spanStartNs());
    last = std::max(last, t.spanEndNs());
  }
  return last > first ? static_cast<double>(last - first) : 0.0;
}

OpRecorder::OpRecorder(Device& device, uint32_t maxDispatches, uint32_t maxBuffers)
    : device_(device), maxDispatches_(std::max(maxDispatches, 1u)), maxBuffers_(std::max(maxBuffers, 1u)) {
  const VulkanDeviceInfo& info = device.info();
  if (!info.timestamps())
    throw Error("Vulkan device " + info.selector() + " (" + info.name + ") has no timestamps on its compute queue");
  const VkDevice d = device.handle();
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2 * maxDispatches_;
  vkCheck(vkCreateQueryPool(d, &qi, nullptr, &queries_), "vkCreateQueryPool");
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, maxDispatches_ * maxBuffers_};
  VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pi.maxSets = maxDispatches_;
  pi.poolSizeCount = 1;
  pi.pPoolSizes = &size;
  VkResult r = vkCreateDescriptorPool(d, &pi, nullptr, &pool_);
  if (r == VK_SUCCESS) {
    try {
      cb_ = device.allocateCommandBuffer();
    } catch (...) {
      vkDestroyDescriptorPool(d, pool_, nullptr);
      vkDestroyQueryPool(d, queries_, nullptr);
      throw;
    }
  } else {
    vkDestroyQueryPool(d, queries_, nullptr);
    throw VkError("vkCreateDescriptorPool", r);
  }
}

OpRecorder::~OpRecorder() {
  const VkDevice d = device_.handle();
  try {
    flush();  // pending ops' events stay readable
  } catch (const std::exception&) {
  }
  if (recording_) vkEndCommandBuffer(cb_);
  device_.freeCommandBuffer(cb_);
  vkDestroyDescriptorPool(d, pool_, nullptr);
  vkDestroyQueryPool(d, queries_, nullptr);
}

const DispatchTime& DispatchBatch::at(uint32_t i) {
  if (!done && recorder) recorder->flush();
  if (!error.empty()) throw Error(error);
  if (!done) throw Error("a Vulkan dispatch's time was read after its recorder went away unflushed");
  return times.at(i);
}

void OpRecorder::startRecording() {
  recorded_ = 0;
  stamps_.clear();
  sinceBarrier_.clear();
  const VkDevice d = device_.handle();
  vkCheck(vkResetDescriptorPool(d, pool_, 0), "vkResetDescriptorPool");
  vkCheck(vkResetCommandBuffer(cb_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkCheck(vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
  recording_ = true;
  vkCmdResetQueryPool(cb_, queries_, 0, 2 * maxDispatches_);
}

void OpRecorder::begin() {
  if (deferred_) {
    // Ops join the batch being recorded (a new one when none is). A batch with little room
    // left is run first, so that an op rarely straddles two batches (its time would then
    // include the host's submit and wait between them).
    if (recording_ && maxDispatches_ - recorded_ < std::min(kOpHeadroom, maxDispatches_ / 4)) flush();
    if (!recording_) {
      startRecording();
      batch_ = std::make_shared<DispatchBatch>();
      batch_->recorder = this;
    }
    op_ = OpTiming{};
    opOpen_ = true;
    return;
  }
  if (recording_) vkEndCommandBuffer(cb_);  // an abandoned recording
  recording_ = false;
  startRecording();
}

void OpRecorder::setDeferred(bool on) {
  if (on == deferred_) return;
  flush();
  if (recording_) vkEndCommandBuffer(cb_);
  recording_ = false;
  deferred_ = on;
}

void OpRecorder::flush() {
  if (!deferred_ || !recording_) return;
  std::shared_ptr<DispatchBatch> batch = std::move(batch_);
  // Whatever happens, the batch no longer points at this recorder: a failed submission's
  // error is what reading its events says, even after the recorder is gone.
  struct Detach {
    DispatchBatch* b;
    ~Detach() {
      if (b) b->recorder = nullptr;
    }
  } detach{batch.get()};
  try {
    std::vector<DispatchTime> times;
    if (recorded_ > 0) {
      times = endAndRun();
    } else {
      recording_ = false;
      vkCheck(vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
    }
    if (batch) {
      batch->times = std::move(times);
      batch->done = true;
    }
  } catch (const std::exception& e) {
    recording_ = false;
    if (batch) batch->error = std::string("a deferred Vulkan batch failed: ") + e.what();
    throw;
  }
}

void OpRecorder::dispatch(const ComputePipeline& pipeline, std::initializer_list<const Buffer*> buffers,
                          const void* push, size_t pushBytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  dispatch(pipeline, std::vector<const Buffer*>(buffers), push, pushBytes, gx, gy, gz);
}

void OpRecorder::dispatch(const ComputePipeline& pipeline, const std::vector<const Buffer*>& buffers,
                          const void* push, size_t pushBytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  std::vector<BufferRange> ranges;
  for (const Buffer* b : buffers) ranges.push_back({b, 0, 0});
  dispatch(pipeline, ranges, push, pushBytes, gx, gy, gz);
}

void OpRecorder::dispatch(const ComputePipeline& pipeline, const std::vector<BufferRange>& buffers,
                          const void* push, size_t pushBytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  const std::string what = std::string("dispatch of ") + pipeline.shader().name;
  if (deferred_ ? !opOpen_ : !recording_) throw Error(what + ": OpRecorder::begin() was not called");
  if (!pipeline.built()) throw Error(what + ": a described-only pipeline (VulkanBackend::DescribeOnly) cannot run");
  if (deferred_ && (!recording_ || recorded_ == maxDispatches_)) {
    // The batch is full, or was run from inside this op (a host transfer or a freed
    // buffer between two of its dispatches): run what is recorded, and go on in a new
    // batch (an op may span two).
    flush();
    startRecording();
    batch_ = std::make_shared<DispatchBatch>();
    batch_->recorder = this;
  }
  if (recorded_ == maxDispatches_)
    throw Error(what + ": more than " + std::to_string(maxDispatches_) + " dispatches in one op");
  if (buffers.size() != pipeline.storageBuffers() || buffers.size() > maxBuffers_)
    throw Error(what + ": " + std::to_string(buffers.size()) + " buffers given, the pipeline has " +
                std::to_string(pipeline.storageBuffers()));
  if (pushBytes != pipeline.pushConstantBytes())
    throw Error(what + ": " + std::to_string(pushBytes) + " bytes of push constants, the pipeline has " +
                std::to_string(pipeline.pushConstantBytes()));
  const auto& lim = device_.info().maxWorkGroupCount;
  if (gx == 0 || gy == 0 || gz == 0 || gx > lim[0] || gy > lim[1] || gz > lim[2])
    throw Error(what + ": work-group count " + std::to_string(gx) + "x" + std::to_string(gy) + "x" +
                std::to_string(gz) + " outside 1.." + std::to_string(lim[0]) + "x" + std::to_string(lim[1]) + "x" +
                std::to_string(lim[2]));
  const VkDevice d = device_.handle();

  VkDescriptorSet set = VK_NULL_HANDLE;
  VkDescriptorSetLayout layout = pipeline.setLayout();
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  vkCheck(vkAllocateDescriptorSets(d, &ai, &set), "vkAllocateDescriptorSets");
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  std::vector<Access> accesses;
  infos.reserve(buffers.size());
  uint32_t binding = 0;
  for (const BufferRange& r : buffers) {
    const Buffer* b = r.buffer;
    if (!b || !b->handle()) throw Error(what + ": buffer " + std::to_string(binding) + " is empty");
    if (r.offset >= b->bytes() || r.bytes > b->bytes() - r.offset)
      throw Error(what + ": binding " + std::to_string(binding) + " (" + std::to_string(r.bytes) + " bytes at " +
                  std::to_string(r.offset) + ") outside its buffer of " + std::to_string(b->bytes()) + " bytes");
    const BindingAccess access = pipeline.access(binding);
    // Tracked widened to 16-byte boundaries: the kernels' quad aliases (sfp4/vec4 views of
    // a binding) touch whole 16-byte groups, so a tail quad of a range that ends mid-group
    // meets its neighbour's range here rather than racing it. Defensive only where ranges
    // start 16-aligned (the backend's tensors; lavapipe's and NVIDIA's offset alignment),
    // so no test can show it: it only ever adds a barrier.
    if (access != BindingAccess::Unused) {
      const uint64_t end = r.bytes ? r.offset + r.bytes : b->bytes();
      accesses.push_back({b->handle(), r.offset & ~uint64_t{15}, (end + 15) & ~uint64_t{15}, access == BindingAccess::Write});
    }
    infos.push_back({b->handle(), r.offset, r.bytes ? r.bytes : VK_WHOLE_SIZE});
    VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = set;
    w.dstBinding = binding++;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &infos.back();
    writes.push_back(w);
  }
  if (!writes.empty()) vkUpdateDescriptorSets(d, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);

  // The in-order queue: this dispatch sees the previous ones' writes (also across
  // submissions: a fence wait orders the host, not device memory visibility). Under
  // hazardsOnly only where it shares a written range with a dispatch since the last barrier.
  bool barrier = sync_.barrier;
  if (barrier && sync_.hazardsOnly && recorded_ > 0) {
    barrier = false;
    for (const Access& a : accesses)
      for (const Access& e : sinceBarrier_)
        if (e.buffer == a.buffer && e.begin < a.end && a.begin < e.end && (e.write || a.write)) barrier = true;
  }
  if (barrier) {
    sinceBarrier_.clear();
    ++barriers_;
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                         0, nullptr, 0, nullptr);
  }
  vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
  vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0, 1, &set, 0, nullptr);
  if (pushBytes) vkCmdPushConstants(cb_, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(pushBytes), push);
  const bool startStamp = sync_.startStamp || stampNextStart_;
  stampNextStart_ = false;
  if (startStamp) vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_, 2 * recorded_);
  vkCmdDispatch(cb_, gx, gy, gz);
  if (sync_.endStamp) vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 2 * recorded_ + 1);
  stamps_.push_back(static_cast<uint8_t>((startStamp ? 1 : 0) | (sync_.endStamp ? 2 : 0)));  // one per dispatch
  sinceBarrier_.insert(sinceBarrier_.end(), accesses.begin(), accesses.end());
  ++dispatches_;
  if (deferred_) op_.pending.emplace_back(batch_, recorded_);
  ++recorded_;
}

void OpRecorder::beginSpanOnly(bool elideBarriers) {
  sync_ = DispatchSync{true, false, false, elideBarriers};
  stampNextStart_ = true;
  spanOnly_ = true;
}

void OpRecorder::endSpanOnly() {
  stampLastEnd();  // a batch that already ran stamped its last dispatch then (endAndRun)
  sync_ = DispatchSync{};
  stampNextStart_ = false;
  spanOnly_ = false;
}

void OpRecorder::stampLastEnd() {
  if (!recording_ || recorded_ == 0 || (stamps_[recorded_ - 1] & 2)) return;
  vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 2 * (recorded_ - 1) + 1);
  stamps_[recorded_ - 1] |= 2;
}

OpTiming OpRecorder::submit() {
  if (deferred_) {
    if (!opOpen_) throw Error("OpRecorder::submit() without begin()");
    opOpen_ = false;
    if (op_.pending.empty()) throw Error("an op recorded no dispatches to time");
    return std::move(op_);
  }
  if (!recording_) throw Error("OpRecorder::submit() without begin()");
  if (recorded_ == 0) {
    recording_ = false;
    vkEndCommandBuffer(cb_);
    throw Error("an op recorded no dispatches to time");
  }
  OpTiming t;
  t.dispatches = endAndRun();
  return t;
}

std::vector<DispatchTime> OpRecorder::endAndRun() {
  if (spanOnly_) stampLastEnd();
  recording_ = false;
  vkCheck(vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
  device_.submitAndWait(cb_);
  std::vector<uint64_t> ticks(2 * recorded_);
  // written[q]: query q has a timestamp (a dispatch recorded without one leaves it unset,
  // and waiting for an unset query never returns).
  std::vector<bool> written(2 * recorded_);
  for (uint32_t i = 0; i < recorded_; ++i) {
    written[2 * i] = stamps_[i] & 1;
    written[2 * i + 1] = (stamps_[i] & 2) != 0;
  }
  if (std::all_of(written.begin(), written.end(), [](bool w) { return w; })) {
    vkCheck(vkGetQueryPoolResults(device_.handle(), queries_, 0, 2 * recorded_, ticks.size() * sizeof(uint64_t),
                                  ticks.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
            "vkGetQueryPoolResults");
  } else {
    // The submission's fence has signalled, so every written query is available: read
    // value and availability pairs without waiting (VK_NOT_READY names the unset ones).
    std::vector<uint64_t> pairs(4 * recorded_);
    const VkResult r = vkGetQueryPoolResults(device_.handle(), queries_, 0, 2 * recorded_,
                                             pairs.size() * sizeof(uint64_t), pairs.data(), 2 * sizeof(uint64_t),
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (r != VK_SUCCESS && r != VK_NOT_READY) vkCheck(r, "vkGetQueryPoolResults");
    for (uint32_t q = 0; q < 2 * recorded_; ++q) {
      ticks[q] = pairs[2 * q];
      if (written[q] && pairs[2 * q + 1] == 0)
        throw Error("a Vulkan timestamp was not available after its submission finished");
    }
  }
  const VulkanDeviceInfo& info = device_.info();
  const uint64_t mask = info.timestampValidBits >= 64 ? ~0ull : (1ull << info.timestampValidBits) - 1;
  const double period = info.timestampPeriodNs;
  // Ticks are extended past timestampValidBits (wrapped counters add 2^bits), then scaled
  // after subtracting a base tick: ticks near 2^60 (a CPU driver's nanosecond clock) would
  // lose their low digits in a double. One base for the recorder's life (its first
  // batch's earliest tick), so that events of different ops share a clock: a graph run's
  // device time is its first op's start to its last op's end.
  const uint32_t bits = info.timestampValidBits;
  auto extend = [&](uint64_t tick) {
    tick &= mask;
    if (bits < 64) {
      if (haveLast_ && tick < lastRaw_ && lastRaw_ - tick > (mask >> 1)) wraps_ += mask + 1;  // wrapped
      if (!haveLast_ || tick > lastRaw_ || lastRaw_ - tick > (mask >> 1)) lastRaw_ = tick;
      haveLast_ = true;
    }
    return tick + wraps_;
  };
  std::vector<uint64_t> ext(ticks.size());
  for (size_t i = 0; i < ticks.size(); ++i) ext[i] = written[i] ? extend(ticks[i]) : 0;
  if (!haveBase_) {  // the earliest tick written (a start, or an end where no start was)
    base_ = UINT64_MAX;
    for (size_t q = 0; q < ext.size(); ++q)
      if (written[q]) base_ = std::min(base_, ext[q]);
    haveBase_ = base_ != UINT64_MAX;
    if (!haveBase_) base_ = 0;
  }
  const uint64_t base = base_;
  auto ns = [&](uint64_t tick) {
    return tick > base ? static_cast<uint64_t>(static_cast<double>(tick - base) * period + 0.5) : 0;
  };
  std::vector<DispatchTime> out;
  for (uint32_t i = 0; i < recorded_; ++i)
    out.push_back({written[2 * i] ? ns(ext[2 * i]) : 0, written[2 * i + 1] ? ns(ext[2 * i + 1]) : 0, written[2 * i],
                   written[2 * i + 1]});
  return out;
}

}  // namespace sdspeed::vk
