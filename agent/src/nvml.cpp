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
  bool initialised = false;

  ~Api() {
    if (initialised) shutdown();
    if (library != nullptr) dlclose(library);
  }

  template <typename Fn>
  bool resolve(Fn& fn, const char* symbol) {
    fn = reinterpret_cast<Fn>(dlsym(library, symbol));
    return fn != nullptr;
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

std::vector<proto::GpuHealth> Nvml::sample() {
  std::vector<proto::GpuHealth> out;
  const unsigned int n = api_->count();
  for (unsigned int i = 0; i < n; ++i) {
    NvmlDevice device = nullptr;
    if (api_->getHandleByIndex(i, &device) != kNvmlSuccess) continue;
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
  }
  return out;
}

}  // namespace ringmaster::agent
