#include "runtime/context.h"

#include "runtime/cl_error.h"

namespace sdspeed {

Context::Context(const DeviceInfo& device, const ContextOptions& options)
    : device_(device),
      sources_(options.kernelDir.empty() ? KernelSources() : KernelSources(options.kernelDir)) {
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

ClMem Context::createBuffer(size_t bytes, cl_mem_flags flags) {
  cl_int err = CL_SUCCESS;
  ClMem m(clCreateBuffer(context_.get(), flags, bytes == 0 ? 4 : bytes, nullptr, &err));
  if (err != CL_SUCCESS)
    throw ClError("clCreateBuffer", err, "allocating " + std::to_string(bytes) + " bytes");
  return m;
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

void Context::finish() { clCheck(clFinish(queue_.get()), "clFinish"); }

}  // namespace sdspeed
