#pragma once
// NVIDIA Management Library, loaded at run time with dlopen so that the agent runs (and builds) on
// hosts without the NVIDIA driver. Only the handful of calls the agent needs are resolved.

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

// Not thread-safe: one owner (the HostSampler) calls it from one thread.
class Nvml {
 public:
  // Opens libnvidia-ml.so.1 and calls nvmlInit_v2. Returns nullptr when the library is absent,
  // a needed symbol is missing or initialisation fails (e.g. no driver loaded).
  static std::unique_ptr<Nvml> load();
  ~Nvml();  // nvmlShutdown, then dlclose

  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // Static facts per device (index, name, UUID, total memory). A device whose handle cannot be
  // obtained is left out; a field NVML cannot read stays empty/zero.
  std::vector<proto::GpuInfo> devices();
  // Utilisation, memory, temperature and power per device now (unreadable ones stay zero), and
  // what names a fault: throttle reasons, clocks, ECC, retired pages or remapped rows, the PCIe
  // link (each left unset when unreadable), and the XIDs since the previous sample.
  std::vector<proto::GpuHealth> sample();

 private:
  struct Api;
  explicit Nvml(std::unique_ptr<Api> api);
  void readFaultFields(void* device, proto::GpuHealth& health);
  // The XIDs queued since the last call, by device index (`handles` are the devices by index).
  std::map<unsigned, std::vector<uint64_t>> drainXids(const std::vector<void*>& handles);
  std::unique_ptr<Api> api_;
};

}  // namespace ringmaster::agent
