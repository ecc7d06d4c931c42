// The run's memory estimate from the model configs alone, before any graph is built or
// buffer allocated (issue #19, item 2): per component its weights, its largest
// activation and its graph's host bookkeeping (pipeline/model/model_size.h), against the
// device's global memory and the host's available memory (runtime/host_memory.h). An
// absurd config (layers_per_block: 1000000000, a 65536x65536 image) is then one Error
// naming the config file and key (or the flag) whose value makes it so, instead of a
// process the OOM killer ends or a driver that aborts.
//
// These are lower bounds: a run refused here cannot fit. Once a component's graph exists
// the executor's own footprint (weights + planned activations + scratch, the figure
// --memory-budget holds to: GraphExecutor::footprint) is checked against the device again
// before it allocates, which catches what the bounds cannot see (e.g. --planner none).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "pipeline/exec/graph_executor.h"
#include "pipeline/model/model_config.h"
#include "runtime/host_memory.h"

namespace sdspeed {

struct ModelConfigs {
  UNetConfig unet;
  VaeConfig vae;
  ClipConfig clip;
};

struct FitRequest {
  int64_t batch = 2;                // text encoder and UNet (the VAE decodes 1)
  int64_t latentH = 0, latentW = 0;
  bool fuse = true;                 // GraphOptions::fuseActivations
  uint64_t activationBytes = 4;     // per element (f32 4, f16 2)
  std::map<std::string, uint64_t> weightBytes;  // per element by component (default 4)
  bool keepResident = false;        // all three components on the device at once
  bool weightsMayStream = false;    // a memory budget: weights may stay on the host
  bool vaeMayTile = false;          // a budget or --vae-tile: the decoder may run on tiles
  // Only the graphs are built (sdspeed shapes, tune --model): host bookkeeping is all
  // that is checked; a large --batch costs no memory there.
  bool graphsOnly = false;
};

struct MemoryCapacity {
  uint64_t deviceBytes = 0;  // 0: no device (shapes, the command line's checks): host only
  std::string device;        // its name, for the error line
  bool deviceIsHost = false; // a CPU device (PoCL): its buffers are host memory too
  HostMemory host;           // bytes 0: unknown, not checked
};

// The request a run with these execution options makes (activation and weight formats,
// a memory budget's streaming and tiling, fused activations).
FitRequest fitRequest(const ExecOptions& exec, int64_t batch, int64_t latentH, int64_t latentW);

// The host's available memory, and with a device its global memory (a CPU device's
// buffers being host memory as well).
MemoryCapacity hostCapacity();

// Throws Error naming the file and key (or flag) that makes the run need more memory
// than `cap` has; returns when the lower bounds fit.
void checkModelFits(const ModelConfigs& cfg, const FitRequest& req, const MemoryCapacity& cap);

}  // namespace sdspeed
