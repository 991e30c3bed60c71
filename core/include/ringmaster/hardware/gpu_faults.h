#pragma once
// A GPU's health sample (proto::GpuHealth, read from NVML by the agent) said in words: what is
// wrong with it now, how bad, and why — "clocks held at 705 of 1980 MHz: thermal slowdown
// (hardware)", "XID 79: the GPU has fallen off the bus". The agent, the app and ringmasterctl
// all name a fault through this, so that they say the same thing.

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::hardware {

enum class FaultSeverity {
  kNotice,    // worth knowing, not a fault (a power cap under load, an application's XID 13)
  kWarning,   // slows or risks the job (a thermal slowdown, a narrowed PCIe link)
  kCritical,  // the GPU is failing or its results may be wrong (uncorrectable ECC, XID 79)
};

struct GpuFault {
  FaultSeverity severity = FaultSeverity::kNotice;
  // What it is about, stable for code and the history: "clocks", "ecc", "retired_pages",
  // "row_remap", "pcie", "xid".
  std::string kind;
  std::string text;  // one line for people, without the GPU's name
};

// NVML's clocks event (throttle) reason bits in words, most serious first ("thermal slowdown
// (hardware), power cap"); the harmless ones (idle, application clocks, display clocks) are left
// out. "" when none is left.
std::string throttleReasonsText(uint64_t reasons);

// What an XID error means, in a few words ("the GPU has fallen off the bus"), and how serious it
// is: XIDs an application causes (13, 31, 43) are notices, hardware's are critical.
std::string xidMeaning(uint64_t xid);
FaultSeverity xidSeverity(uint64_t xid);

// Every fault of one sample, most serious first; empty for a healthy GPU or one whose sample has
// none of the fields that tell (no NVML health fields).
std::vector<GpuFault> gpuFaults(const proto::GpuHealth& gpu);

// The most serious fault's severity; kNotice when there is none.
FaultSeverity worstSeverity(const std::vector<GpuFault>& faults);
const char* severityName(FaultSeverity severity);  // "notice", "warning", "critical"

}  // namespace ringmaster::hardware
