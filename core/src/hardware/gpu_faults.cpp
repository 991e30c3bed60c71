#include "ringmaster/hardware/gpu_faults.h"

#include <algorithm>
#include <map>

namespace ringmaster::hardware {
namespace {

// nvmlClocksEventReason* (nvml.h; the same bits as the older nvmlClocksThrottleReason*).
constexpr uint64_t kGpuIdle = 0x1;
constexpr uint64_t kApplicationsClocksSetting = 0x2;
constexpr uint64_t kSwPowerCap = 0x4;
constexpr uint64_t kHwSlowdown = 0x8;
constexpr uint64_t kSyncBoost = 0x10;
constexpr uint64_t kSwThermalSlowdown = 0x20;
constexpr uint64_t kHwThermalSlowdown = 0x40;
constexpr uint64_t kHwPowerBrakeSlowdown = 0x80;
constexpr uint64_t kDisplayClockSetting = 0x100;
// Clocks a person or an idle GPU chose: nothing is wrong.
constexpr uint64_t kHarmless = kGpuIdle | kApplicationsClocksSetting | kDisplayClockSetting;
constexpr uint64_t kHardware = kHwSlowdown | kHwThermalSlowdown | kHwPowerBrakeSlowdown;

// Below this share of its maximum, a power-capped clock is a slowdown worth a warning: a GPU at
// its power limit under a heavy kernel typically runs at 80-95% of its boost clock.
constexpr double kSlowClockShare = 0.7;
// Only a busy GPU keeps its PCIe link at full speed: an idle one drops to Gen 1 to save power.
constexpr double kBusyPercent = 50;

// Most serious first.
constexpr struct {
  uint64_t bit;
  const char* words;
} kReasons[] = {
    {kHwThermalSlowdown, "thermal slowdown (hardware)"},
    {kHwPowerBrakeSlowdown, "power brake (the power supply asked for it)"},
    {kHwSlowdown, "hardware slowdown (thermal or power brake)"},
    {kSwThermalSlowdown, "thermal slowdown (driver)"},
    {kSwPowerCap, "power cap"},
    {kSyncBoost, "sync boost (held to its group's clock)"},
};

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

void addClockFault(const proto::GpuHealth& gpu, std::vector<GpuFault>& out) {
  const uint64_t reasons = gpu.has_throttle_reasons() ? gpu.throttle_reasons() & ~kHarmless : 0;
  const bool clocks_known = gpu.has_sm_clock_mhz() && gpu.sm_clock_max_mhz() > 0;
  const double share = clocks_known ? double(gpu.sm_clock_mhz()) / gpu.sm_clock_max_mhz() : 1;
  const std::string clocks = clocks_known ? std::to_string(gpu.sm_clock_mhz()) + " of " +
                                                std::to_string(gpu.sm_clock_max_mhz()) + " MHz"
                                          : std::string();
  if (reasons == 0) {
    // No reason given, yet a busy GPU well below its clock: say what is seen.
    if (clocks_known && share < 0.5 && gpu.utilization_percent() >= kBusyPercent) {
      out.push_back({FaultSeverity::kWarning, "clocks",
                     "clocks at " + clocks + " under load, with no reason from the driver"});
    }
    return;
  }
  FaultSeverity severity = FaultSeverity::kNotice;
  if (reasons & kHardware) {
    severity = FaultSeverity::kCritical;
  } else if ((reasons & kSwThermalSlowdown) ||
             ((reasons & kSwPowerCap) && share < kSlowClockShare)) {
    severity = FaultSeverity::kWarning;
  }
  const std::string words = throttleReasonsText(reasons);
  out.push_back(
      {severity, "clocks",
       clocks_known ? "clocks held at " + clocks + ": " + words : "clocks slowed: " + words});
}

void addMemoryFaults(const proto::GpuHealth& gpu, std::vector<GpuFault>& out) {
  if (gpu.ecc_volatile_uncorrected() > 0) {
    out.push_back({FaultSeverity::kCritical, "ecc",
                   plural(gpu.ecc_volatile_uncorrected(), "uncorrectable ECC error",
                          "uncorrectable ECC errors") +
                       " since the driver loaded: results on it may be wrong"});
  } else if (gpu.ecc_aggregate_uncorrected() > 0) {
    out.push_back({FaultSeverity::kWarning, "ecc",
                   plural(gpu.ecc_aggregate_uncorrected(), "uncorrectable ECC error",
                          "uncorrectable ECC errors") +
                       " in its lifetime"});
  }
  if (gpu.ecc_volatile_corrected() > 0) {
    out.push_back(
        {FaultSeverity::kNotice, "ecc",
         plural(gpu.ecc_volatile_corrected(), "corrected ECC error", "corrected ECC errors") +
             " since the driver loaded"});
  }
  if (gpu.row_remap_failed()) {
    out.push_back({FaultSeverity::kCritical, "row_remap",
                   "a row remap failed: its memory cannot be repaired, the GPU needs servicing"});
  } else if (gpu.row_remap_pending()) {
    out.push_back({FaultSeverity::kWarning, "row_remap",
                   "a row remap waits for a GPU reset: the faulty memory is in use until then"});
  } else if (gpu.remapped_rows_uncorrectable() > 0) {
    out.push_back({FaultSeverity::kNotice, "row_remap",
                   plural(gpu.remapped_rows_uncorrectable(), "row", "rows") +
                       " remapped after uncorrectable errors"});
  }
  if (gpu.retired_pages_pending()) {
    out.push_back(
        {FaultSeverity::kWarning, "retired_pages",
         "a page retirement waits for a GPU reset: the faulty page is in use until then"});
  } else if (gpu.retired_pages() > 0) {
    out.push_back({FaultSeverity::kNotice, "retired_pages",
                   plural(gpu.retired_pages(), "memory page", "memory pages") + " retired"});
  }
}

void addPcieFault(const proto::GpuHealth& gpu, std::vector<GpuFault>& out) {
  if (!gpu.has_pcie_width() || !gpu.has_pcie_generation()) return;
  const bool narrow = gpu.pcie_width_max() > 0 && gpu.pcie_width() < gpu.pcie_width_max();
  const bool slow = gpu.pcie_generation_max() > 0 &&
                    gpu.pcie_generation() < gpu.pcie_generation_max() &&
                    gpu.utilization_percent() >= kBusyPercent;
  if (!narrow && !slow) return;
  out.push_back({FaultSeverity::kWarning, "pcie",
                 "PCIe link Gen " + std::to_string(gpu.pcie_generation()) + " x" +
                     std::to_string(gpu.pcie_width()) + (slow && !narrow ? " under load" : "") +
                     ", capable of Gen " + std::to_string(gpu.pcie_generation_max()) + " x" +
                     std::to_string(gpu.pcie_width_max())});
}

void addXidFaults(const proto::GpuHealth& gpu, std::vector<GpuFault>& out) {
  std::map<uint64_t, int> counts;  // one fault per code, in code order
  for (uint64_t xid : gpu.xids()) ++counts[xid];
  for (const auto& [xid, count] : counts) {
    out.push_back({xidSeverity(xid), "xid",
                   "XID " + std::to_string(xid) + ": " + xidMeaning(xid) +
                       (count > 1 ? " (" + std::to_string(count) + " times)" : "")});
  }
}

}  // namespace

std::string throttleReasonsText(uint64_t reasons) {
  std::string out;
  for (const auto& reason : kReasons) {
    if ((reasons & reason.bit) == 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(reason.words);
  }
  return out;
}

std::string xidMeaning(uint64_t xid) {
  // NVIDIA's "XID Errors" catalogue, the codes a training cluster meets.
  switch (xid) {
    case 13:
      return "graphics engine exception (usually the application: an illegal access)";
    case 31:
      return "GPU memory page fault (usually the application: an illegal address)";
    case 32:
      return "invalid or corrupted push buffer stream";
    case 38:
      return "driver firmware error";
    case 43:
      return "GPU stopped processing (the application faulted; the GPU is fine)";
    case 45:
      return "preemptive cleanup after an earlier error";
    case 48:
      return "double-bit ECC error";
    case 61:
      return "internal micro-controller breakpoint";
    case 62:
      return "internal micro-controller halt";
    case 63:
      return "ECC page retirement or row remap recorded";
    case 64:
      return "ECC page retirement or row remap failed";
    case 74:
      return "NVLink error";
    case 79:
      return "the GPU has fallen off the bus";
    case 92:
      return "high single-bit ECC error rate";
    case 94:
      return "contained ECC error (the affected application was stopped)";
    case 95:
      return "uncontained ECC error (every application on the GPU is affected)";
    case 119:
      return "GSP firmware timed out";
    case 120:
      return "GSP firmware error";
    case 140:
      return "unrecovered ECC error";
    default:
      return "see NVIDIA's XID catalogue";
  }
}

FaultSeverity xidSeverity(uint64_t xid) {
  switch (xid) {
    case 13:
    case 31:
    case 43:
    case 45:
    case 63:
      return FaultSeverity::kNotice;
    case 48:
    case 62:
    case 64:
    case 74:
    case 79:
    case 92:
    case 94:
    case 95:
    case 119:
    case 120:
    case 140:
      return FaultSeverity::kCritical;
    default:
      return FaultSeverity::kWarning;
  }
}

std::vector<GpuFault> gpuFaults(const proto::GpuHealth& gpu) {
  std::vector<GpuFault> out;
  addXidFaults(gpu, out);
  addMemoryFaults(gpu, out);
  addClockFault(gpu, out);
  addPcieFault(gpu, out);
  std::stable_sort(out.begin(), out.end(),
                   [](const GpuFault& a, const GpuFault& b) { return a.severity > b.severity; });
  return out;
}

FaultSeverity worstSeverity(const std::vector<GpuFault>& faults) {
  FaultSeverity worst = FaultSeverity::kNotice;
  for (const GpuFault& fault : faults) worst = std::max(worst, fault.severity);
  return worst;
}

const char* severityName(FaultSeverity severity) {
  switch (severity) {
    case FaultSeverity::kNotice:
      return "notice";
    case FaultSeverity::kWarning:
      return "warning";
    case FaultSeverity::kCritical:
      return "critical";
  }
  return "notice";
}

}  // namespace ringmaster::hardware
