// sdspeed: kernel benchmarking and autotuning for Stable Diffusion on GPUs.
#include <exception>
#include <new>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "runtime/opencl/cl_error.h"

namespace {

void usage(std::ostream& os) {
  os << "usage: sdspeed VERB [options]\n"
        "verbs:\n"
        "  devices                      list OpenCL and Vulkan devices (opencl:P:D, vulkan:N)\n"
        "  check [--op OP] [--full]     check kernel variants against the Eigen references\n"
        "  bench --op OP --shape NxCxHxW  time variants on the device (event timing)\n"
        "  tune --op OP --shape S|--shapes FILE  sweep variants x parameters; tuning database\n"
        "  roofline                     measure copy bandwidth and FMA rate (configs/devices/)\n"
        "  db merge|compare             join shards' databases and sweep caches, compare two runs\n"
#ifdef SDSPEED_WITH_PIPELINE
        "  run --model DIR              the Stable Diffusion pipeline: image, timing and memory report\n"
        "  shapes --model DIR           the op instances of a model (a shape set for tune)\n"
        "  ablate --model DIR           the paper's cumulative ablation table (configs/ablation/)\n"
        "  quantize --model DIR --weights int8 -o OUT  int8/int4 weights written once (kernels/QUANTIZATION.md)\n"
#endif
        "common options: --device opencl:P:D|P:D|NAME  --kernel-dir DIR  --cache-dir DIR  --no-disk-cache\n"
        "`sdspeed VERB --help` lists a verb's options.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(std::cout);
    return args.empty() ? 2 : 0;
  }
  const std::string verb = args[0];
  args.erase(args.begin());
  try {
    if (verb == "devices") return sdspeed::cmdDevices(args);
    if (verb == "check") return sdspeed::cmdCheck(args);
    if (verb == "bench") return sdspeed::cmdBench(args);
    if (verb == "tune") return sdspeed::cmdTune(args);
    if (verb == "roofline") return sdspeed::cmdRoofline(args);
    if (verb == "db") return sdspeed::cmdDb(args);
#ifdef SDSPEED_WITH_PIPELINE
    if (verb == "run") return sdspeed::cmdRun(args);
    if (verb == "shapes") return sdspeed::cmdShapes(args);
    if (verb == "ablate") return sdspeed::cmdAblate(args);
    if (verb == "quantize") return sdspeed::cmdQuantize(args);
#endif
    std::cerr << "sdspeed: error: unknown verb '" << verb << "' (see sdspeed --help)\n";
    return 2;
  } catch (const sdspeed::RunFailure& e) {
    // One line naming the problem; the compiler log of a failed build follows it.
    std::cerr << "sdspeed " << verb << ": error: " << e.what() << "\n";
    return 1;
  } catch (const sdspeed::Error& e) {
    // Bad input (runtime/error.h): exit 2, as scripts/adb-sweep's own bad input.
    std::cerr << "sdspeed " << verb << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "sdspeed " << verb << ": error: out of host memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "sdspeed " << verb << ": error: " << e.what() << "\n";
    return 1;
  }
}
