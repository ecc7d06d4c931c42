// What `sdspeed run` and `sdspeed ablate` read from the command line before any
// device work: the model (folder, single file, random weights), image size, steps,
// guidance, scheduler, token ids (given, tokenized or seeded), initial latents
// (given or torch.randn of the seed) and the execution options.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "cli/args.h"
#include "pipeline/run/sd_pipeline.h"

namespace sdspeed {

struct RunSetup {
  std::string model;
  ModelSource src;
  int64_t width = 0, height = 0, latentH = 0, latentW = 0, batch = 2;
  int steps = 20;
  float cfg = 7.5f;
  uint64_t seed = 0;
  std::string schedulerName, schedulerPath;
  ExecOptions exec;
  std::vector<int64_t> condIds, uncondIds;
  std::vector<float> initLatents;
  bool seededTokens = false;
};

// -W/-H/-o are the usual short names; Args knows long ones only.
std::vector<std::string> expandShortOptions(const std::vector<std::string>& argv);
// The options and flags runSetup reads (besides the device ones).
std::set<std::string> runSetupOptions();
std::set<std::string> runSetupFlags();
// Throws Error naming the option or file for anything wrong. With `device`, the model's
// memory lower bounds are checked against its global memory too (else the host's only),
// before the initial latents are drawn.
RunSetup runSetup(const Args& a, const DeviceCaps* device = nullptr);
// One stderr line when the device has no tuning database under exec.dbDir (saying where
// it looked): every op then runs a fallback point (vendor or generic defaults), often
// several times slower, which the report alone said before. One line, too, naming the
// families whose entries were tuned against other kernels than this build's (the
// database's recorded source hashes).
void noteDatabase(const std::string& verb, const ExecOptions& exec, Backend& device);
// A one-line progress bar on a terminal, a line per step otherwise.
void printProgress(int done, int total, double unetMs);

// --memory-budget SIZE, --derived-weights resident|per-call, --scratch planned|own,
// --arena-binding offsets|sub-buffers, --stream-staging ring|pageable (see ExecOptions).
void applyMemoryOptions(const Args& a, ExecOptions& exec);
// "f32|f16" (--arithmetic, an ablation row's `arithmetic`, named by `what`) as a DType;
// throws Error when the text is bad or when no kernel family has a variant computing in
// it (f16 on OpenCL today), rather than run f32 kernels under an f16 label.
DType runArithmetic(const std::string& text, const std::string& what);

}  // namespace sdspeed
