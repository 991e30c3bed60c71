// Fuzz target for the parsers of Slurm's output (slurm/job_state.h): one input is what squeue,
// sacct or scontrol printed, perhaps over ssh from a login node whose Slurm is newer, older or
// broken. Ordinary ctest runs replay tests/fuzz/corpus/slurm_output; with -DRINGMASTER_FUZZ=ON
// (clang) it also builds as slurm_output_fuzz.
//
// Besides "no crash, no exception, no out-of-bounds read": a parsed job has an id, its phase is
// the phase of the state it carries, and an error names what was wrong.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "ringmaster/slurm/job_state.h"

namespace {

namespace slurm = ringmaster::slurm;

void checkJob(const slurm::JobState& job) {
  RM_FUZZ_CHECK(!job.job_id.empty());
  RM_FUZZ_CHECK(job.phase == slurm::phaseOf(job.slurm_state));
  RM_FUZZ_CHECK(slurm::phaseName(job.phase) != nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into a buffer of exactly `size` bytes so that ASan catches any read past the end.
  const std::string input(reinterpret_cast<const char*>(data), size);
  for (const auto& parsed : {slurm::parseSqueue(input), slurm::parseSacct(input)}) {
    if (!parsed.isOk()) {
      RM_FUZZ_CHECK(!parsed.status().message().empty());
      continue;
    }
    for (const slurm::JobState& job : *parsed) checkJob(job);
  }
  const auto scontrol = slurm::parseScontrolJob(input);
  if (scontrol.isOk()) {
    checkJob(*scontrol);
  } else {
    RM_FUZZ_CHECK(!scontrol.status().message().empty());
  }
  return 0;
}
