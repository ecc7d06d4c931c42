// The run-time OpenCL loader (runtime/opencl/opencl_dlopen.*): its error line when nothing
// loads, the SDSPEED_OPENCL_LIBRARY override, and a kernel run end to end through the
// trampolines. This executable links no OpenCL library (tests/CMakeLists.txt), so a
// passing kernel run proves every call went through dlopen()/dlsym().
#include <CL/cl.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/opencl/opencl_dlopen.h"

using namespace sdspeed;

TEST(OpenclDlopen, NamesEveryPathTriedWhenNothingLoads) {
  std::string loaded, error;
  // A missing file and a library without clGetPlatformIDs (libm) are both refused.
  void* h = openOpenclLibrary({"/nonexistent/libOpenCL.so", "libm.so.6"}, loaded, error);
  EXPECT_EQ(h, nullptr);
  EXPECT_TRUE(loaded.empty());
  EXPECT_EQ(error.rfind("no OpenCL library found: tried /nonexistent/libOpenCL.so (", 0), 0u) << error;
  EXPECT_NE(error.find("libm.so.6 (no clGetPlatformIDs)"), std::string::npos) << error;
  EXPECT_NE(error.find("SDSPEED_OPENCL_LIBRARY"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
}

TEST(OpenclDlopen, EnvironmentOverridesTheVendorPaths) {
  ::unsetenv("SDSPEED_OPENCL_LIBRARY");
  const std::vector<std::string> defaults = openclLibraryCandidates();
  ASSERT_GE(defaults.size(), 4u);
  EXPECT_EQ(defaults[0], "/vendor/lib64/libOpenCL.so");
  EXPECT_EQ(defaults[1], "/system/vendor/lib64/libOpenCL.so");
  EXPECT_EQ(defaults[2], "/system/lib64/libOpenCL.so");
  ::setenv("SDSPEED_OPENCL_LIBRARY", "/opt/x/libOpenCL.so", 1);
  EXPECT_EQ(openclLibraryCandidates(), std::vector<std::string>{"/opt/x/libOpenCL.so"});
  ::unsetenv("SDSPEED_OPENCL_LIBRARY");
}

TEST(OpenclDlopen, RunsAKernelThroughTheTrampolines) {
  // Not loaded before the first OpenCL call: nothing linked it in.
  EXPECT_EQ(dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD), nullptr);
  cl_uint np = 0;
  ASSERT_EQ(clGetPlatformIDs(0, nullptr, &np), CL_SUCCESS);
  ASSERT_GT(np, 0u);
  EXPECT_NE(openclLibraryPath().find("libOpenCL.so"), std::string::npos) << openclLibraryPath();

  std::vector<cl_platform_id> platforms(np);
  ASSERT_EQ(clGetPlatformIDs(np, platforms.data(), nullptr), CL_SUCCESS);
  cl_device_id dev = nullptr;
  ASSERT_EQ(clGetDeviceIDs(platforms[0], CL_DEVICE_TYPE_ALL, 1, &dev, nullptr), CL_SUCCESS);
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  const char* src = "kernel void f(global float* x) { size_t i = get_global_id(0); x[i] = 2 * x[i] + 1; }";
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  ASSERT_EQ(clBuildProgram(prog, 1, &dev, "", nullptr, nullptr), CL_SUCCESS);
  cl_kernel k = clCreateKernel(prog, "f", &err);
  ASSERT_EQ(err, CL_SUCCESS);

  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  const size_t bytes = host.size() * sizeof(float), n = host.size();
  cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  ASSERT_EQ(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(k, 0, sizeof(cl_mem), &buf), CL_SUCCESS);
  cl_event ev = nullptr;
  ASSERT_EQ(clEnqueueNDRangeKernel(q, k, 1, nullptr, &n, nullptr, 0, nullptr, &ev), CL_SUCCESS);
  ASSERT_EQ(clWaitForEvents(1, &ev), CL_SUCCESS);
  cl_ulong t0 = 0, t1 = 0;
  ASSERT_EQ(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr), CL_SUCCESS);
  ASSERT_EQ(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr), CL_SUCCESS);
  EXPECT_LE(t0, t1);
  ASSERT_EQ(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr), CL_SUCCESS);
  for (size_t i = 0; i < host.size(); ++i) ASSERT_EQ(host[i], 2.0f * i + 1) << i;

  // Now the library is in the process, loaded by the trampolines.
  EXPECT_NE(dlopen(openclLibraryPath().c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
  clReleaseEvent(ev);
  clReleaseMemObject(buf);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
}
