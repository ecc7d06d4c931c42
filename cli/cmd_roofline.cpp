#include <iostream>

#include "runtime/device_key.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "runtime/opencl/cl_error.h"
#include "tuning/roofline.h"

namespace sdspeed {

int cmdRoofline(const std::vector<std::string>& argv) {
  auto options = kDeviceOptions;
  options.insert({"mib", "devices-dir", "min-ms", "warmup", "warmup-ms", "llc-mib"});
  auto flags = kDeviceFlags;
  flags.insert({"help"});
  Args args(argv, options, flags);
  if (args.has("help")) {
    std::cout << "usage: sdspeed roofline [--backend opencl|vulkan] [--device D] [--mib N] [--devices-dir DIR] [--min-ms MS]\n"
                 "Measures the device's copy bandwidth (two N MiB buffers, default 1024, bytes read +\n"
                 "written) and fp32 FMA rate, checks both kernels' results, and writes them to\n"
                 "DIR/<device-key>.yaml (default configs/devices) for bench to report % of ceiling.\n"
                 "On Vulkan also the fixed cost per dispatch: a chain of tiny dispatches with a\n"
                 "barrier and timestamps each (as ops are recorded), the barrier alone, and neither.\n";
    return 0;
  }
  const int mib = args.getInt("mib", 1024);
  if (mib <= 0) throw Error("--mib must be positive");
  std::unique_ptr<Backend> backend = backendFromArgs(args);
  Ceilings c = measureCeilings(*backend, static_cast<size_t>(mib) << 20, timingPolicyFromArgs(args));
  const std::string dir = args.get("devices-dir", "configs/devices");
  migrateKeyedPath(dir, c.deviceKey, ".yaml");  // a legacy-named file becomes this one (device_key.h)
  const std::string path = dir + "/" + c.deviceKey + ".yaml";
  saveCeilings(c, path);
  std::cout << "device " << c.deviceKey << ": " << c.deviceName << " (driver " << c.driver << ")\n"
            << "copy: " << fmtFixed(c.copyGBs, 1) << " GB/s (read + write, " << (c.copyBytes >> 20)
            << " MiB buffers)\nfma:  " << fmtFixed(c.fmaGflops, 1) << " GFLOP/s (fp32)\n";
  if (c.dispatchTimedUs > 0)
    std::cout << "dispatch: " << fmtFixed(c.dispatchTimedUs, 2) << " us with a barrier and timestamps, "
              << fmtFixed(c.dispatchBarrierUs, 2) << " us with the barrier alone, " << fmtFixed(c.dispatchFreeUs, 2)
              << " us independent (per dispatch of a chain of 256 one-work-group copies)\n";
  std::cout << "wrote " << path << "\n";
  return 0;
}

}  // namespace sdspeed
