// Trampolines for every OpenCL entry point sdspeed uses, resolved with dlsym() in the
// library runtime/opencl/opencl_dlopen.h finds. Compiled instead of linking OpenCL::OpenCL when
// SDSPEED_OPENCL_DLOPEN is ON. A function sdspeed starts to call and this list lacks is a
// link error in such a build (the arm64 CI build is one), never a silent gap.
#include "runtime/opencl/opencl_dlopen.h"

#include <CL/cl.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

std::vector<std::string> openclLibraryCandidates() {
  if (const char* env = std::getenv("SDSPEED_OPENCL_LIBRARY"); env && *env) return {env};
  return {"/vendor/lib64/libOpenCL.so", "/system/vendor/lib64/libOpenCL.so",
          "/system/lib64/libOpenCL.so", "libOpenCL.so", "libOpenCL.so.1"};
}

void* openOpenclLibrary(const std::vector<std::string>& candidates, std::string& loaded,
                        std::string& error) {
  std::string tried;
  for (const std::string& path : candidates) {
    std::string why;
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (dlsym(h, "clGetPlatformIDs")) {
        loaded = path;
        return h;
      }
      why = "no clGetPlatformIDs";
      dlclose(h);
    } else {
      const char* e = dlerror();
      why = e ? e : "dlopen failed";
      // dlerror() repeats the path first; keep only the reason.
      if (why.rfind(path + ": ", 0) == 0) why.erase(0, path.size() + 2);
    }
    tried += (tried.empty() ? "" : ", ") + path + " (" + why + ")";
  }
  error = "no OpenCL library found: tried " + tried +
          "; set SDSPEED_OPENCL_LIBRARY to the vendor's libOpenCL.so";
  return nullptr;
}

namespace {

struct Library {
  void* handle = nullptr;
  std::string path, error;
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    l.handle = openOpenclLibrary(openclLibraryCandidates(), l.path, l.error);
    return l;
  }();
  return lib;
}

void* symbol(const char* name) {
  const Library& lib = library();
  if (!lib.handle) throw Error(lib.error);
  void* fn = dlsym(lib.handle, name);
  if (!fn) throw Error("OpenCL library " + lib.path + " lacks " + name);
  return fn;
}

}  // namespace

const std::string& openclLibraryPath() {
  const Library& lib = library();
  if (!lib.handle) throw Error(lib.error);
  return lib.path;
}

}  // namespace sdspeed

// One trampoline: the symbol is looked up once (thread-safe static) and called. The
// parameter list must match CL/cl.h exactly, or the compiler rejects the redeclaration.
#define SDSPEED_CL_TRAMPOLINE(ret, name, params, args)                              \
  extern "C" CL_API_ENTRY ret CL_API_CALL name params {                             \
    using Fn = ret(CL_API_CALL*) params;                                            \
    static const Fn fn = reinterpret_cast<Fn>(sdspeed::symbol(#name));              \
    return fn args;                                                                 \
  }

#define INFO_PARAMS size_t param_value_size, void *param_value, size_t *param_value_size_ret
#define INFO_ARGS param_value_size, param_value, param_value_size_ret
#define WAIT_PARAMS cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event
#define WAIT_ARGS num_events_in_wait_list, event_wait_list, event

// Platforms and devices.
SDSPEED_CL_TRAMPOLINE(cl_int, clGetPlatformIDs,
                      (cl_uint num_entries, cl_platform_id* platforms, cl_uint* num_platforms),
                      (num_entries, platforms, num_platforms))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetPlatformInfo,
                      (cl_platform_id platform, cl_platform_info param_name, INFO_PARAMS),
                      (platform, param_name, INFO_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetDeviceIDs,
                      (cl_platform_id platform, cl_device_type device_type, cl_uint num_entries,
                       cl_device_id* devices, cl_uint* num_devices),
                      (platform, device_type, num_entries, devices, num_devices))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetDeviceInfo,
                      (cl_device_id device, cl_device_info param_name, INFO_PARAMS),
                      (device, param_name, INFO_ARGS))

// Contexts and queues.
SDSPEED_CL_TRAMPOLINE(cl_context, clCreateContext,
                      (const cl_context_properties* properties, cl_uint num_devices,
                       const cl_device_id* devices,
                       void(CL_CALLBACK* pfn_notify)(const char*, const void*, size_t, void*),
                       void* user_data, cl_int* errcode_ret),
                      (properties, num_devices, devices, pfn_notify, user_data, errcode_ret))
SDSPEED_CL_TRAMPOLINE(cl_int, clRetainContext, (cl_context context), (context))
SDSPEED_CL_TRAMPOLINE(cl_int, clReleaseContext, (cl_context context), (context))
SDSPEED_CL_TRAMPOLINE(cl_command_queue, clCreateCommandQueue,
                      (cl_context context, cl_device_id device,
                       cl_command_queue_properties properties, cl_int* errcode_ret),
                      (context, device, properties, errcode_ret))
SDSPEED_CL_TRAMPOLINE(cl_int, clRetainCommandQueue, (cl_command_queue q), (q))
SDSPEED_CL_TRAMPOLINE(cl_int, clReleaseCommandQueue, (cl_command_queue q), (q))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetCommandQueueInfo,
                      (cl_command_queue q, cl_command_queue_info param_name, INFO_PARAMS),
                      (q, param_name, INFO_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clFlush, (cl_command_queue q), (q))
SDSPEED_CL_TRAMPOLINE(cl_int, clFinish, (cl_command_queue q), (q))

// Memory objects.
SDSPEED_CL_TRAMPOLINE(cl_mem, clCreateBuffer,
                      (cl_context context, cl_mem_flags flags, size_t size, void* host_ptr,
                       cl_int* errcode_ret),
                      (context, flags, size, host_ptr, errcode_ret))
SDSPEED_CL_TRAMPOLINE(cl_mem, clCreateSubBuffer,
                      (cl_mem buffer, cl_mem_flags flags, cl_buffer_create_type type,
                       const void* info, cl_int* errcode_ret),
                      (buffer, flags, type, info, errcode_ret))
SDSPEED_CL_TRAMPOLINE(cl_mem, clCreateImage,
                      (cl_context context, cl_mem_flags flags, const cl_image_format* format,
                       const cl_image_desc* desc, void* host_ptr, cl_int* errcode_ret),
                      (context, flags, format, desc, host_ptr, errcode_ret))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetSupportedImageFormats,
                      (cl_context context, cl_mem_flags flags, cl_mem_object_type image_type,
                       cl_uint num_entries, cl_image_format* formats, cl_uint* num_formats),
                      (context, flags, image_type, num_entries, formats, num_formats))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetMemObjectInfo,
                      (cl_mem memobj, cl_mem_info param_name, INFO_PARAMS),
                      (memobj, param_name, INFO_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clSetMemObjectDestructorCallback,
                      (cl_mem memobj, void(CL_CALLBACK* pfn_notify)(cl_mem, void*), void* user_data),
                      (memobj, pfn_notify, user_data))
SDSPEED_CL_TRAMPOLINE(cl_int, clRetainMemObject, (cl_mem memobj), (memobj))
SDSPEED_CL_TRAMPOLINE(cl_int, clReleaseMemObject, (cl_mem memobj), (memobj))

// Programs and kernels.
SDSPEED_CL_TRAMPOLINE(cl_program, clCreateProgramWithSource,
                      (cl_context context, cl_uint count, const char** strings,
                       const size_t* lengths, cl_int* errcode_ret),
                      (context, count, strings, lengths, errcode_ret))
SDSPEED_CL_TRAMPOLINE(cl_program, clCreateProgramWithBinary,
                      (cl_context context, cl_uint num_devices, const cl_device_id* device_list,
                       const size_t* lengths, const unsigned char** binaries,
                       cl_int* binary_status, cl_int* errcode_ret),
                      (context, num_devices, device_list, lengths, binaries, binary_status,
                       errcode_ret))
SDSPEED_CL_TRAMPOLINE(cl_int, clBuildProgram,
                      (cl_program program, cl_uint num_devices, const cl_device_id* device_list,
                       const char* options, void(CL_CALLBACK* pfn_notify)(cl_program, void*),
                       void* user_data),
                      (program, num_devices, device_list, options, pfn_notify, user_data))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetProgramInfo,
                      (cl_program program, cl_program_info param_name, INFO_PARAMS),
                      (program, param_name, INFO_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetProgramBuildInfo,
                      (cl_program program, cl_device_id device,
                       cl_program_build_info param_name, INFO_PARAMS),
                      (program, device, param_name, INFO_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clRetainProgram, (cl_program program), (program))
SDSPEED_CL_TRAMPOLINE(cl_int, clReleaseProgram, (cl_program program), (program))
SDSPEED_CL_TRAMPOLINE(cl_kernel, clCreateKernel,
                      (cl_program program, const char* kernel_name, cl_int* errcode_ret),
                      (program, kernel_name, errcode_ret))
SDSPEED_CL_TRAMPOLINE(cl_int, clSetKernelArg,
                      (cl_kernel kernel, cl_uint arg_index, size_t arg_size,
                       const void* arg_value),
                      (kernel, arg_index, arg_size, arg_value))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetKernelInfo,
                      (cl_kernel kernel, cl_kernel_info param_name, INFO_PARAMS),
                      (kernel, param_name, INFO_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetKernelWorkGroupInfo,
                      (cl_kernel kernel, cl_device_id device,
                       cl_kernel_work_group_info param_name, INFO_PARAMS),
                      (kernel, device, param_name, INFO_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clRetainKernel, (cl_kernel kernel), (kernel))
SDSPEED_CL_TRAMPOLINE(cl_int, clReleaseKernel, (cl_kernel kernel), (kernel))

// Commands and events.
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueNDRangeKernel,
                      (cl_command_queue q, cl_kernel kernel, cl_uint work_dim,
                       const size_t* global_work_offset, const size_t* global_work_size,
                       const size_t* local_work_size, WAIT_PARAMS),
                      (q, kernel, work_dim, global_work_offset, global_work_size,
                       local_work_size, WAIT_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueReadBuffer,
                      (cl_command_queue q, cl_mem buffer, cl_bool blocking, size_t offset,
                       size_t size, void* ptr, WAIT_PARAMS),
                      (q, buffer, blocking, offset, size, ptr, WAIT_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueWriteBuffer,
                      (cl_command_queue q, cl_mem buffer, cl_bool blocking, size_t offset,
                       size_t size, const void* ptr, WAIT_PARAMS),
                      (q, buffer, blocking, offset, size, ptr, WAIT_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueCopyBuffer,
                      (cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset,
                       size_t dst_offset, size_t size, WAIT_PARAMS),
                      (q, src, dst, src_offset, dst_offset, size, WAIT_ARGS))
// Pinned staging (Context::HostStaging): mapped once, unmapped when freed.
SDSPEED_CL_TRAMPOLINE(void*, clEnqueueMapBuffer,
                      (cl_command_queue q, cl_mem buffer, cl_bool blocking_map, cl_map_flags map_flags,
                       size_t offset, size_t size, WAIT_PARAMS, cl_int* errcode_ret),
                      (q, buffer, blocking_map, map_flags, offset, size, WAIT_ARGS, errcode_ret))
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueUnmapMemObject,
                      (cl_command_queue q, cl_mem memobj, void* mapped_ptr, WAIT_PARAMS),
                      (q, memobj, mapped_ptr, WAIT_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueMarkerWithWaitList, (cl_command_queue q, WAIT_PARAMS), (q, WAIT_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueBarrierWithWaitList, (cl_command_queue q, WAIT_PARAMS), (q, WAIT_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueFillBuffer,
                      (cl_command_queue q, cl_mem buffer, const void* pattern,
                       size_t pattern_size, size_t offset, size_t size, WAIT_PARAMS),
                      (q, buffer, pattern, pattern_size, offset, size, WAIT_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueReadImage,
                      (cl_command_queue q, cl_mem image, cl_bool blocking, const size_t* origin,
                       const size_t* region, size_t row_pitch, size_t slice_pitch, void* ptr,
                       WAIT_PARAMS),
                      (q, image, blocking, origin, region, row_pitch, slice_pitch, ptr, WAIT_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clEnqueueWriteImage,
                      (cl_command_queue q, cl_mem image, cl_bool blocking, const size_t* origin,
                       const size_t* region, size_t row_pitch, size_t slice_pitch,
                       const void* ptr, WAIT_PARAMS),
                      (q, image, blocking, origin, region, row_pitch, slice_pitch, ptr, WAIT_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clWaitForEvents, (cl_uint num_events, const cl_event* events),
                      (num_events, events))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetEventInfo, (cl_event event, cl_event_info param_name, INFO_PARAMS),
                      (event, param_name, INFO_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clGetEventProfilingInfo,
                      (cl_event event, cl_profiling_info param_name, INFO_PARAMS),
                      (event, param_name, INFO_ARGS))
SDSPEED_CL_TRAMPOLINE(cl_int, clRetainEvent, (cl_event event), (event))
SDSPEED_CL_TRAMPOLINE(cl_int, clReleaseEvent, (cl_event event), (event))
