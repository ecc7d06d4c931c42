// The Vulkan tests' device: an instance with the validation layer on (ctest sets
// SDSPEED_VK_VALIDATION; a direct run validates too), the first device, and at the end
// the check that the layer reported nothing more than the test expected. A machine
// without a driver or device skips, naming the package that provides lavapipe.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "runtime/vulkan/device.h"
#include "runtime/vulkan/device_info.h"
#include "runtime/vulkan/instance.h"

namespace sdspeed::vk {

class VulkanDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("SDSPEED_VK_VALIDATION", "1", 0);
    instance_ = Instance::create();
    if (!instance_) GTEST_SKIP() << "no Vulkan driver installed (mesa-vulkan-drivers provides lavapipe)";
    devices_ = listVulkanDevices(*instance_);
    if (devices_.empty()) GTEST_SKIP() << "no Vulkan device (mesa-vulkan-drivers provides lavapipe)";
    info_ = selectVulkanDevice(devices_, "");
    device_ = std::make_unique<Device>(instance_, info_);
  }
  // A derived fixture releases what it made on device_ first, then calls this.
  void TearDown() override {
    device_.reset();
    if (instance_) {
      EXPECT_EQ(instance_->validationErrors(), expectedValidationErrors_)
          << "the validation layer reported: " << instance_->lastValidationError();
    }
  }
  std::shared_ptr<Instance> instance_;
  std::vector<VulkanDeviceInfo> devices_;
  VulkanDeviceInfo info_;
  std::unique_ptr<Device> device_;
  int expectedValidationErrors_ = 0;  // a test that provokes errors on purpose raises it
};

}  // namespace sdspeed::vk
