#include "runtime/vulkan/backend.h"

#include <cstdlib>

#include "runtime/error.h"
#include "runtime/vulkan/instance.h"
#include "runtime/vulkan/spirv.h"

namespace sdspeed::vk {

VkTensor::VkTensor(Device& device, const TensorDesc& desc, bool withCanary)
    : DeviceTensor(desc, withCanary, 0), device_(device) {
  if (desc.format.storage != Storage::Buffer)
    throw UnsupportedError("Vulkan tensors are storage buffers: " + desc.text() + " is image2d storage");
  // Vulkan has no zero-sized buffers; a 4-byte floor keeps every binding valid, and whole
  // words let a shader read a tensor of 2-byte or block elements as uint words to its end.
  const size_t bytes = desc.bytes() + (withCanary ? kCanaryBytes : 0);
  buffer_ = std::make_shared<Buffer>(device, std::max<size_t>(4, (bytes + 3) / 4 * 4));
}

VkTensor::VkTensor(Device& device, const TensorDesc& desc, std::shared_ptr<Buffer> buffer, uint64_t offsetBytes)
    : DeviceTensor(desc, false, offsetBytes), device_(device), buffer_(std::move(buffer)) {
  if (desc.format.storage != Storage::Buffer)
    throw UnsupportedError("Vulkan tensors are storage buffers: " + desc.text() + " is image2d storage");
  const uint64_t align = device.info().minStorageBufferOffsetAlignment;
  if (align && offsetBytes % align)
    throw Error("a Vulkan tensor at offset " + std::to_string(offsetBytes) + " is not a multiple of the device's "
                "minStorageBufferOffsetAlignment " + std::to_string(align));
  if (offsetBytes + desc.bytes() > buffer_->bytes())
    throw Error("a Vulkan tensor of " + std::to_string(desc.bytes()) + " bytes at offset " + std::to_string(offsetBytes) +
                " does not fit its buffer of " + std::to_string(buffer_->bytes()) + " bytes");
}

BufferRange VkTensor::range() const {
  // Whole own buffers as before; a placed tensor is its own bytes, rounded up to 4 (the
  // arena's plan keeps tensors apart by the alignment, at least 4) but within the buffer.
  if (offset_ == 0 && !canary_ && desc_.bytes() + 4 > buffer_->bytes()) return {buffer_.get(), 0, 0};
  const uint64_t want = std::max<uint64_t>(4, (desc_.bytes() + (canary_ ? kCanaryBytes : 0) + 3) / 4 * 4);
  return {buffer_.get(), offset_, std::min<uint64_t>(want, buffer_->bytes() - offset_)};
}

void VkTensor::writePhysical(std::span<const uint8_t> bytes) {
  if (!bytes.empty()) vk::upload(device_, *buffer_, bytes.data(), bytes.size(), offset_);
}

std::vector<uint8_t> VkTensor::readPhysical() const {
  std::vector<uint8_t> bytes(desc_.bytes());
  if (!bytes.empty()) vk::download(device_, *buffer_, bytes.data(), bytes.size(), offset_);
  return bytes;
}

void VkTensor::writeTail(const std::vector<uint8_t>& bytes) {
  vk::upload(device_, *buffer_, bytes.data(), bytes.size(), offset_ + desc_.bytes());
}

std::vector<uint8_t> VkTensor::readTail(size_t n) const {
  std::vector<uint8_t> bytes(n);
  vk::download(device_, *buffer_, bytes.data(), n, offset_ + desc_.bytes());
  return bytes;
}

const VkTensor& asVk(const DeviceTensor& t) {
  auto* vk = dynamic_cast<const VkTensor*>(&t);
  if (!vk) throw Error("a tensor of another GPU API given to a Vulkan shader");
  return *vk;
}

OpEvents eventsOf(const OpTiming& timing) {
  OpEvents out;
  for (const auto& d : timing.dispatches) out.push_back(std::make_shared<VkEvent>(d.spanStartNs(), d.spanEndNs()));
  for (const auto& [batch, i] : timing.pending) out.push_back(std::make_shared<VkEvent>(batch, i));
  return out;
}

VulkanBackend::VulkanBackend(const std::string& selector, const std::string& cacheDir) {
  instance_ = Instance::create();
  if (!instance_) throw Error("--backend vulkan: no Vulkan driver is installed (mesa-vulkan-drivers provides lavapipe)");
  const auto devices = listVulkanDevices(*instance_);
  if (devices.empty()) throw Error("--backend vulkan: the Vulkan loader lists no devices");
  device_ = std::make_unique<Device>(instance_, selectVulkanDevice(devices, selector));
  device_->setMemoryTracker(tracker_);
  caps_ = device_->info().caps();
  // What creation enabled is what shaders may use, whatever the device reports.
  caps_.fp16 = device_->float16Enabled();
  caps_.storage16 = device_->storage16Enabled();
  // Vulkan has no query for the last-level cache, and timeOp rotates inputs past it so
  // that an op is timed cache-cold, as on OpenCL. Assume 64 MiB, above every GPU sdspeed
  // targets (the H200's L2 is 60 MB; phones' system caches are at most a few MB):
  // rotating past too much costs memory, never accuracy. `--llc-mib` overrides it.
  if (caps_.globalCacheBytes == 0) caps_.globalCacheBytes = 64ull << 20;
  cache_ = std::make_unique<PipelineCache>(cacheDir);  // entries under cacheDir/vulkan-pipelines/
  // Deferred submission, up to 1024 dispatches per command buffer (2048 timestamp
  // queries; descriptor sets of up to 8 buffers, every family's maximum).
  recorder_ = std::make_unique<OpRecorder>(*device_, 1024, 8);
  recorder_->setDeferred(true);
  device_->setBeforeHostAccess([this] { recorder_->flush(); });
}

VulkanBackend::~VulkanBackend() {
  // Pending work runs (or is dropped on a lost device), then the device forgets the hook
  // into the recorder, which goes first among the members.
  try {
    recorder_->flush();
  } catch (const std::exception&) {
  }
  device_->setBeforeHostAccess(nullptr);
}

void VulkanBackend::beginSpanOnly() {
  const char* every = std::getenv("SDSPEED_VK_STAMP_EVERY_DISPATCH");
  if (every && std::string(every) == "1") return;
  const char* barriers = std::getenv("SDSPEED_VK_BARRIER_EVERY_DISPATCH");
  recorder_->beginSpanOnly(!(barriers && std::string(barriers) == "1"));
}

void VulkanBackend::endSpanOnly() { recorder_->endSpanOnly(); }

std::unique_ptr<DeviceTensor> VulkanBackend::makeTensor(const TensorDesc& desc, bool withCanary) {
  if (std::string why = desc.unsupportedReason(caps_); !why.empty()) throw UnsupportedError(why);
  return std::make_unique<VkTensor>(*device_, desc, withCanary);
}

namespace {

// The executor's arena: one storage buffer, tensors bound as ranges of it.
class VkArena : public DeviceArena {
 public:
  VkArena(Device& device, uint64_t bytes)
      : device_(device), buffer_(std::make_shared<Buffer>(device, std::max<uint64_t>(4, (bytes + 3) / 4 * 4))) {}
  uint64_t bytes() const override { return buffer_->bytes(); }
  void* handle() const override { return buffer_.get(); }
  std::unique_ptr<DeviceTensor> tensorAt(uint64_t offset, const TensorDesc& desc) override {
    return std::make_unique<VkTensor>(device_, desc, buffer_, offset);
  }

 private:
  Device& device_;
  std::shared_ptr<Buffer> buffer_;
};

}  // namespace

uint64_t VulkanBackend::subBufferAlignment() const {
  // At least 16 bytes, so an NC4HW4 texel (a vec4 of f32) never straddles the offset.
  return std::max<uint64_t>(16, info().minStorageBufferOffsetAlignment);
}

std::unique_ptr<DeviceArena> VulkanBackend::makeArena(uint64_t bytes, bool) {
  return std::make_unique<VkArena>(*device_, bytes);
}

std::unique_ptr<DeviceTensor> VulkanBackend::makeView(const DeviceTensor& base, const TensorDesc& desc) {
  const VkTensor& b = asVk(base);
  return std::make_unique<VkTensor>(*device_, desc, b.sharedBuffer(), b.offsetBytes());
}

const ComputePipeline& VulkanBackend::pipeline(const SpirvShader& shader, uint32_t storageBuffers, uint32_t pushBytes,
                                               const std::vector<SpecConstant>& spec) {
  std::string key = std::string(shader.name) + "/" + std::to_string(storageBuffers) + "/" + std::to_string(pushBytes);
  for (const auto& s : spec) key += "/" + std::to_string(s.id) + "=" + std::to_string(s.bits);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return *it->second;
  if (describeOnly_) {
    if (auto it = described_.find(key); it != described_.end()) return *it->second;
    auto d = std::make_unique<ComputePipeline>(*device_, shader, storageBuffers, pushBytes, spec, nullptr, false);
    return *described_.emplace(key, std::move(d)).first->second;
  }
  // Made first, inserted after: a creation that throws leaves no empty entry behind.
  auto made = std::make_unique<ComputePipeline>(*device_, shader, storageBuffers, pushBytes, spec, cache_.get());
  return *pipelines_.emplace(key, std::move(made)).first->second;
}

std::string VulkanBackend::describe() const {
  const auto& i = device_->info();
  return i.name + " (" + i.selector() + ", " + i.driverText() + ", Vulkan " + i.apiVersionText() + ")";
}

std::string VulkanBackend::buildSummary() const {
  const auto st = cache_->stats();
  return "pipelines: " + std::to_string(pipelines_.size()) + " made, " + std::to_string(st.diskHits) +
         " from disk cache (SPIR-V compiled at build time)";
}

std::string VulkanBackend::dumpKernels(const std::string& dir) const {
  for (const auto& [key, p] : pipelines_) p->dump(dir);
  return "wrote " + std::to_string(pipelines_.size()) + " pipelines (GLSL and SPIR-V) to " + dir;
}

}  // namespace sdspeed::vk
