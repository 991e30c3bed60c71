#include "nvml.h"

#include <dlfcn.h>

namespace ringmaster::agent {
namespace {

// The few NVML types and constants used, declared here to avoid a build dependency on nvml.h.
// Layouts and values are part of NVML's stable C ABI.
using NvmlReturn = int;  // nvmlReturn_t
constexpr NvmlReturn kNvmlSuccess = 0;
using NvmlDevice = struct NvmlDeviceOpaque*;  // nvmlDevice_t
struct NvmlMemory {                           // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlUtilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlEventData {  // nvmlEventData_t
  NvmlDevice device;
  unsigned long long event_type;
  unsigned long long event_data;  // the XID for nvmlEventTypeXidCriticalError
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
using NvmlEventSet = struct NvmlEventSetOpaque*;  // nvmlEventSet_t
constexpr NvmlReturn kNvmlErrorInsufficientSize = 7;
constexpr unsigned long long kNvmlEventTypeXidCriticalError = 0x8;
constexpr int kNvmlClockSm = 1;   // NVML_CLOCK_SM
constexpr int kNvmlClockMem = 2;  // NVML_CLOCK_MEM
constexpr int kNvmlMemoryErrorCorrected = 0, kNvmlMemoryErrorUncorrected = 1;
constexpr int kNvmlVolatileEcc = 0, kNvmlAggregateEcc = 1;
constexpr int kNvmlRetiredMultipleSingleBit = 0, kNvmlRetiredDoubleBit = 1;
constexpr int kNvmlTemperatureGpu = 0;    // NVML_TEMPERATURE_GPU
constexpr unsigned kNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidBufferSize = 96;  // >= NVML_DEVICE_UUID_V2_BUFFER_SIZE (96)

}  // namespace

struct Nvml::Api {
  void* library = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*getCount)(unsigned int*) = nullptr;
  NvmlReturn (*getHandleByIndex)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*getName)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*getUuid)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*getMemoryInfo)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*getUtilizationRates)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*getTemperature)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*getPowerUsage)(NvmlDevice, unsigned int*) = nullptr;  // milliwatts
  // Health that names a fault; each is optional (older drivers, or not on every GPU).
  NvmlReturn (*getThrottleReasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*getClockInfo)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*getMaxClockInfo)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*getTotalEccErrors)(NvmlDevice, int, int, unsigned long long*) = nullptr;
  NvmlReturn (*getRetiredPages)(NvmlDevice, int, unsigned int*, unsigned long long*) = nullptr;
  NvmlReturn (*getRetiredPagesPending)(NvmlDevice, int*) = nullptr;
  NvmlReturn (*getRemappedRows)(NvmlDevice, unsigned int*, unsigned int*, unsigned int*,
                                unsigned int*) = nullptr;
  NvmlReturn (*getPcieGeneration)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*getPcieGenerationMax)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*getPcieWidth)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*getPcieWidthMax)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*eventSetCreate)(NvmlEventSet*) = nullptr;
  NvmlReturn (*eventSetFree)(NvmlEventSet) = nullptr;
  NvmlReturn (*registerEvents)(NvmlDevice, unsigned long long, NvmlEventSet) = nullptr;
  NvmlReturn (*eventSetWait)(NvmlEventSet, NvmlEventData*, unsigned int) = nullptr;
  NvmlEventSet xid_events = nullptr;  // every device's XIDs, drained at each sample
  bool initialised = false;

  ~Api() {
    if (xid_events != nullptr) eventSetFree(xid_events);
    if (initialised) shutdown();
    if (library != nullptr) dlclose(library);
  }

  template <typename Fn>
  bool resolve(Fn& fn, const char* symbol) {
    fn = reinterpret_cast<Fn>(dlsym(library, symbol));
    return fn != nullptr;
  }

  void resolveOptional() {
    // The newer name first: drivers since 535 call throttle reasons "clocks event reasons".
    if (!resolve(getThrottleReasons, "nvmlDeviceGetCurrentClocksEventReasons")) {
      resolve(getThrottleReasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    }
    resolve(getClockInfo, "nvmlDeviceGetClockInfo");
    resolve(getMaxClockInfo, "nvmlDeviceGetMaxClockInfo");
    resolve(getTotalEccErrors, "nvmlDeviceGetTotalEccErrors");
    resolve(getRetiredPages, "nvmlDeviceGetRetiredPages");
    resolve(getRetiredPagesPending, "nvmlDeviceGetRetiredPagesPendingStatus");
    resolve(getRemappedRows, "nvmlDeviceGetRemappedRows");
    resolve(getPcieGeneration, "nvmlDeviceGetCurrPcieLinkGeneration");
    resolve(getPcieGenerationMax, "nvmlDeviceGetMaxPcieLinkGeneration");
    resolve(getPcieWidth, "nvmlDeviceGetCurrPcieLinkWidth");
    resolve(getPcieWidthMax, "nvmlDeviceGetMaxPcieLinkWidth");
    const bool events = resolve(eventSetCreate, "nvmlEventSetCreate") &&
                        resolve(eventSetFree, "nvmlEventSetFree") &&
                        resolve(registerEvents, "nvmlDeviceRegisterEvents") &&
                        resolve(eventSetWait, "nvmlEventSetWait_v2");
    if (events && eventSetCreate(&xid_events) != kNvmlSuccess) xid_events = nullptr;
  }

  // XIDs are events: register every device once (a GPU that cannot report them is skipped).
  void watchXids() {
    if (xid_events == nullptr) return;
    for (unsigned int i = 0, n = count(); i < n; ++i) {
      NvmlDevice device = nullptr;
      if (getHandleByIndex(i, &device) != kNvmlSuccess) continue;
      registerEvents(device, kNvmlEventTypeXidCriticalError, xid_events);
    }
  }

  unsigned int count() {
    unsigned int n = 0;
    return getCount(&n) == kNvmlSuccess ? n : 0;
  }
};

std::unique_ptr<Nvml> Nvml::load() {
  auto api = std::make_unique<Api>();
  api->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) return nullptr;
  const bool resolved = api->resolve(api->init, "nvmlInit_v2") &&
                        api->resolve(api->shutdown, "nvmlShutdown") &&
                        api->resolve(api->getCount, "nvmlDeviceGetCount_v2") &&
                        api->resolve(api->getHandleByIndex, "nvmlDeviceGetHandleByIndex_v2") &&
                        api->resolve(api->getName, "nvmlDeviceGetName") &&
                        api->resolve(api->getUuid, "nvmlDeviceGetUUID") &&
                        api->resolve(api->getMemoryInfo, "nvmlDeviceGetMemoryInfo") &&
                        api->resolve(api->getUtilizationRates, "nvmlDeviceGetUtilizationRates") &&
                        api->resolve(api->getTemperature, "nvmlDeviceGetTemperature") &&
                        api->resolve(api->getPowerUsage, "nvmlDeviceGetPowerUsage");
  if (!resolved || api->init() != kNvmlSuccess) return nullptr;
  api->initialised = true;
  api->resolveOptional();
  api->watchXids();
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() = default;

std::vector<proto::GpuInfo> Nvml::devices() {
  std::vector<proto::GpuInfo> out;
  const unsigned int n = api_->count();
  for (unsigned int i = 0; i < n; ++i) {
    NvmlDevice device = nullptr;
    if (api_->getHandleByIndex(i, &device) != kNvmlSuccess) continue;
    proto::GpuInfo& info = out.emplace_back();
    info.set_index(i);
    char buffer[kUuidBufferSize > kNameBufferSize ? kUuidBufferSize : kNameBufferSize] = {};
    if (api_->getName(device, buffer, kNameBufferSize) == kNvmlSuccess) {
      buffer[kNameBufferSize - 1] = '\0';
      info.set_name(buffer);
    }
    buffer[0] = '\0';
    if (api_->getUuid(device, buffer, kUuidBufferSize) == kNvmlSuccess) {
      buffer[kUuidBufferSize - 1] = '\0';
      info.set_uuid(buffer);
    }
    NvmlMemory memory{};
    if (api_->getMemoryInfo(device, &memory) == kNvmlSuccess) {
      info.set_memory_total_bytes(memory.total);
    }
  }
  return out;
}

namespace {

// Reads a value with `read` into the proto through `set`, only when NVML could read it.
template <typename T, typename Read, typename Set>
void readInto(Read read, Set set) {
  T value{};
  if (read(&value) == kNvmlSuccess) set(value);
}

}  // namespace

void Nvml::readFaultFields(void* handle, proto::GpuHealth& health) {
  Api& api = *api_;
  auto device = static_cast<NvmlDevice>(handle);
  if (api.getThrottleReasons) {
    readInto<unsigned long long>([&](auto* v) { return api.getThrottleReasons(device, v); },
                                 [&](auto v) { health.set_throttle_reasons(v); });
  }
  if (api.getClockInfo && api.getMaxClockInfo) {
    readInto<unsigned>([&](auto* v) { return api.getClockInfo(device, kNvmlClockSm, v); },
                       [&](auto v) { health.set_sm_clock_mhz(v); });
    readInto<unsigned>([&](auto* v) { return api.getMaxClockInfo(device, kNvmlClockSm, v); },
                       [&](auto v) { health.set_sm_clock_max_mhz(v); });
    readInto<unsigned>([&](auto* v) { return api.getClockInfo(device, kNvmlClockMem, v); },
                       [&](auto v) { health.set_memory_clock_mhz(v); });
    readInto<unsigned>([&](auto* v) { return api.getMaxClockInfo(device, kNvmlClockMem, v); },
                       [&](auto v) { health.set_memory_clock_max_mhz(v); });
  }
  if (api.getTotalEccErrors) {  // NOT_SUPPORTED on cards without ECC (or with it off)
    auto ecc = [&](int type, int counter, auto set) {
      readInto<unsigned long long>(
          [&](auto* v) { return api.getTotalEccErrors(device, type, counter, v); }, set);
    };
    ecc(kNvmlMemoryErrorCorrected, kNvmlVolatileEcc,
        [&](auto v) { health.set_ecc_volatile_corrected(v); });
    ecc(kNvmlMemoryErrorUncorrected, kNvmlVolatileEcc,
        [&](auto v) { health.set_ecc_volatile_uncorrected(v); });
    ecc(kNvmlMemoryErrorUncorrected, kNvmlAggregateEcc,
        [&](auto v) { health.set_ecc_aggregate_uncorrected(v); });
  }
  if (api.getRemappedRows) {  // Ampere and later remap rows instead of retiring pages
    unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
    if (api.getRemappedRows(device, &corrected, &uncorrected, &pending, &failed) == kNvmlSuccess) {
      health.set_remapped_rows_uncorrectable(uncorrected);
      health.set_row_remap_pending(pending != 0);
      health.set_row_remap_failed(failed != 0);
    }
  }
  if (api.getRetiredPages && !health.has_remapped_rows_uncorrectable()) {
    // With a count of 0 NVML says how many there are (INSUFFICIENT_SIZE when there are some).
    unsigned total = 0;
    bool known = false;
    for (int cause : {kNvmlRetiredMultipleSingleBit, kNvmlRetiredDoubleBit}) {
      unsigned pages = 0;
      const NvmlReturn rc = api.getRetiredPages(device, cause, &pages, nullptr);
      if (rc != kNvmlSuccess && rc != kNvmlErrorInsufficientSize) continue;
      known = true;
      total += pages;
    }
    if (known) health.set_retired_pages(total);
    int pending = 0;  // nvmlEnableState_t
    if (api.getRetiredPagesPending &&
        api.getRetiredPagesPending(device, &pending) == kNvmlSuccess) {
      health.set_retired_pages_pending(pending != 0);
    }
  }
  if (api.getPcieGeneration && api.getPcieGenerationMax && api.getPcieWidth &&
      api.getPcieWidthMax) {
    readInto<unsigned>([&](auto* v) { return api.getPcieGeneration(device, v); },
                       [&](auto v) { health.set_pcie_generation(v); });
    readInto<unsigned>([&](auto* v) { return api.getPcieGenerationMax(device, v); },
                       [&](auto v) { health.set_pcie_generation_max(v); });
    readInto<unsigned>([&](auto* v) { return api.getPcieWidth(device, v); },
                       [&](auto v) { health.set_pcie_width(v); });
    readInto<unsigned>([&](auto* v) { return api.getPcieWidthMax(device, v); },
                       [&](auto v) { health.set_pcie_width_max(v); });
  }
}

std::map<unsigned, std::vector<uint64_t>> Nvml::drainXids(const std::vector<void*>& handles) {
  std::map<unsigned, std::vector<uint64_t>> out;
  if (api_->xid_events == nullptr) return out;
  NvmlEventData event{};
  // A timeout of 0 returns at once: TIMEOUT when nothing is queued.
  while (api_->eventSetWait(api_->xid_events, &event, 0) == kNvmlSuccess) {
    if (event.event_type != kNvmlEventTypeXidCriticalError) continue;
    for (unsigned i = 0; i < handles.size(); ++i) {
      if (handles[i] == static_cast<void*>(event.device)) out[i].push_back(event.event_data);
    }
  }
  return out;
}

std::vector<proto::GpuHealth> Nvml::sample() {
  std::vector<proto::GpuHealth> out;
  const unsigned int n = api_->count();
  std::vector<void*> handles(n, nullptr);
  for (unsigned int i = 0; i < n; ++i) {
    NvmlDevice device = nullptr;
    if (api_->getHandleByIndex(i, &device) == kNvmlSuccess) handles[i] = device;
  }
  auto xids = drainXids(handles);
  for (unsigned int i = 0; i < n; ++i) {
    auto device = static_cast<NvmlDevice>(handles[i]);
    if (device == nullptr) continue;
    proto::GpuHealth& health = out.emplace_back();
    health.set_index(i);
    NvmlUtilization utilization{};
    if (api_->getUtilizationRates(device, &utilization) == kNvmlSuccess) {
      health.set_utilization_percent(utilization.gpu);
    }
    NvmlMemory memory{};
    if (api_->getMemoryInfo(device, &memory) == kNvmlSuccess) {
      health.set_memory_used_bytes(memory.used);
      health.set_memory_total_bytes(memory.total);
    }
    unsigned int celsius = 0;
    if (api_->getTemperature(device, kNvmlTemperatureGpu, &celsius) == kNvmlSuccess) {
      health.set_temperature_c(celsius);
    }
    unsigned int milliwatts = 0;
    if (api_->getPowerUsage(device, &milliwatts) == kNvmlSuccess) {
      health.set_power_w(milliwatts / 1000.0);
    }
    readFaultFields(device, health);
    for (uint64_t xid : xids[i]) health.add_xids(xid);
  }
  return out;
}

}  // namespace ringmaster::agent
