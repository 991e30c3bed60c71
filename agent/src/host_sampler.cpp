#include "host_sampler.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace ringmaster::agent {
namespace {

// nullopt when the file cannot be read, with why in *error ("/proc/stat: Too many open files").
std::optional<std::string> readFile(const std::string& path, std::string* error = nullptr) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  // procfs files report size 0, so read to EOF rather than by size.
  std::string text;
  if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in.is_open() || in.bad()) {
    if (error) *error = path + ": " + (errno ? std::strerror(errno) : "cannot be read");
    return std::nullopt;
  }
  return text;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// Calls fn(line) for each line of `text`.
template <typename Fn>
void forEachLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const size_t end = text.find('\n');
    fn(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

// Whitespace-separated unsigned integers from the start of `s`; stops at the first non-number.
std::vector<uint64_t> parseCounters(std::string_view s) {
  std::vector<uint64_t> out;
  while (true) {
    s = trim(s);
    if (s.empty()) break;
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc()) break;
    out.push_back(value);
    s.remove_prefix(static_cast<size_t>(ptr - s.data()));
  }
  return out;
}

// /proc/meminfo field in bytes ("MemTotal:  16318480 kB"), nullopt when absent.
std::optional<uint64_t> meminfoBytes(std::string_view meminfo, std::string_view key) {
  std::optional<uint64_t> out;
  forEachLine(meminfo, [&](std::string_view line) {
    const size_t colon = line.find(':');
    if (out || colon == std::string_view::npos || line.substr(0, colon) != key) return;
    auto numbers = parseCounters(line.substr(colon + 1));
    if (numbers.empty()) return;
    const bool kib = line.find("kB") != std::string_view::npos;
    out = numbers[0] * (kib ? 1024 : 1);
  });
  return out;
}

double secondsBetween(std::chrono::steady_clock::time_point from,
                      std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

HostSampler::HostSampler(HostSamplerOptions options) : options_(std::move(options)) {
  if (options_.use_nvml) {
    nvml_ = Nvml::load();
    if (nvml_) {
      for (const proto::GpuInfo& gpu : nvml_->devices()) {
        gpus_.push_back({static_cast<int>(gpu.index()), gpu.uuid(), gpu.name()});
      }
    }
  }
  have_cpu_ = readCpuTimes(last_cpu_);
  last_net_ = readNetCounters().value_or(std::map<std::string, NetCounters>{});
  last_time_ = now();
}

HostSampler::~HostSampler() = default;

Status HostSampler::limitGpus(const GpuLimit& limit) {
  if (nvml_) {
    RM_ASSIGN_OR_RETURN(gpus_, job::selectGpus(limit.list, gpus_, limit.what));
    return Status::ok();
  }
  // No NVML (no driver here, or a test): the declared GPUs, numbered as given; UUIDs in order.
  RM_ASSIGN_OR_RETURN(const std::vector<std::string> entries,
                      job::splitGpuList(limit.list, limit.what));
  for (const std::string& entry : entries) {
    const bool numeric = entry.find_first_not_of("0123456789") == std::string::npos;
    if (numeric && entry.size() > 5) {
      return invalidArgument(limit.what + ": GPU index '" + entry + "' is out of range");
    }
    const job::Gpu gpu{numeric ? std::stoi(entry) : static_cast<int>(gpus_.size()),
                       numeric ? "" : entry, ""};
    for (const job::Gpu& seen : gpus_) {
      if (seen.cudaId() == gpu.cudaId()) {
        return invalidArgument(limit.what + " names GPU '" + entry + "' twice");
      }
    }
    gpus_.push_back(gpu);
    proto::GpuInfo& info = declared_.emplace_back();
    info.set_index(static_cast<uint32_t>(gpu.index));
    info.set_uuid(gpu.uuid);
  }
  return Status::ok();
}

bool HostSampler::allowed(uint32_t nvml_index) const {
  return std::any_of(gpus_.begin(), gpus_.end(), [&](const job::Gpu& gpu) {
    return gpu.index == static_cast<int>(nvml_index);
  });
}

std::string HostSampler::path(const char* relative) const {
  return options_.proc_root + "/" + relative;
}

std::chrono::steady_clock::time_point HostSampler::now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

bool HostSampler::readCpuTimes(CpuTimes& out, std::string* error) const {
  auto stat = readFile(path("stat"), error);
  if (!stat) return false;
  bool found = false;
  forEachLine(*stat, [&](std::string_view line) {
    if (found || line.substr(0, 4) != "cpu ") return;
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is already
    // counted in user and nice, so only the first eight make up the total.
    auto fields = parseCounters(line.substr(4));
    if (fields.size() < 4) return;
    fields.resize(std::min<size_t>(fields.size(), 8));
    uint64_t total = 0;
    for (uint64_t f : fields) total += f;
    const uint64_t idle = fields[3] + (fields.size() > 4 ? fields[4] : 0);
    out.total = total;
    out.busy = total - idle;
    found = true;
  });
  if (!found && error) *error = path("stat") + ": no 'cpu' line";
  return found;
}

std::optional<std::map<std::string, HostSampler::NetCounters>> HostSampler::readNetCounters(
    std::string* error) const {
  std::map<std::string, NetCounters> out;
  auto dev = readFile(path("net/dev"), error);
  if (!dev) return std::nullopt;
  // "  eth0: rx_bytes rx_packets errs drop fifo frame compressed multicast tx_bytes ..."; the two
  // header lines have no ':' after the interface column.
  forEachLine(*dev, [&](std::string_view line) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    const std::string_view name = trim(line.substr(0, colon));
    auto fields = parseCounters(line.substr(colon + 1));
    if (name.empty() || fields.size() < 9) return;
    out[std::string(name)] = NetCounters{fields[0], fields[8]};
  });
  return out;
}

proto::Inventory HostSampler::inventory() {
  proto::Inventory inv;
  auto hostname = readFile(path("sys/kernel/hostname"));
  if (hostname && !trim(*hostname).empty()) {
    inv.set_hostname(std::string(trim(*hostname)));
  } else {
    char buffer[256] = {};
    if (gethostname(buffer, sizeof(buffer) - 1) == 0) inv.set_hostname(buffer);
  }

  uint32_t cpus = 0;
  if (auto stat = readFile(path("stat"))) {
    forEachLine(*stat, [&](std::string_view line) {
      if (line.size() > 3 && line.substr(0, 3) == "cpu" && line[3] >= '0' && line[3] <= '9') {
        ++cpus;
      }
    });
  }
  if (cpus == 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpus = online > 0 ? static_cast<uint32_t>(online) : 0;
  }
  inv.set_cpus(cpus);

  if (auto meminfo = readFile(path("meminfo"))) {
    inv.set_memory_total_bytes(meminfoBytes(*meminfo, "MemTotal").value_or(0));
  }
  if (nvml_) {
    for (auto& gpu : nvml_->devices()) {
      if (allowed(gpu.index())) *inv.add_gpus() = std::move(gpu);
    }
  }
  for (const proto::GpuInfo& gpu : declared_) *inv.add_gpus() = gpu;
  return inv;
}

proto::HealthSample HostSampler::sample() {
  proto::HealthSample health;
  const auto time = now();
  const double seconds = secondsBetween(last_time_, time);
  last_time_ = time;
  // A value that could not be read is named, never reported as 0.
  std::string error;
  auto unmeasured = [&](const char* what) {
    health.add_unmeasured(what);
    health.set_error(health.error().empty() ? error : health.error() + "; " + error);
  };

  CpuTimes cpu;
  if (readCpuTimes(cpu, &error)) {
    if (have_cpu_ && cpu.total > last_cpu_.total) {
      // iowait may go backwards on some kernels, so busy can too: clamp to 0..100.
      const double busy = static_cast<double>(static_cast<int64_t>(cpu.busy - last_cpu_.busy));
      const double total = static_cast<double>(cpu.total - last_cpu_.total);
      health.set_cpu_percent(std::clamp(100.0 * busy / total, 0.0, 100.0));
    }
    last_cpu_ = cpu;
    have_cpu_ = true;
  } else {
    unmeasured("cpu");
  }

  if (auto meminfo = readFile(path("meminfo"), &error)) {
    const uint64_t total = meminfoBytes(*meminfo, "MemTotal").value_or(0);
    // MemAvailable exists since Linux 3.14; MemFree underestimates what is free before that.
    const uint64_t available = meminfoBytes(*meminfo, "MemAvailable")
                                   .value_or(meminfoBytes(*meminfo, "MemFree").value_or(total));
    health.set_memory_total_bytes(total);
    health.set_memory_used_bytes(total > available ? total - available : 0);
  } else {
    unmeasured("memory");
  }

  if (auto loadavg = readFile(path("loadavg"), &error)) {
    const std::string_view text = trim(*loadavg);
    double load1 = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), load1);
    if (ec == std::errc()) health.set_load1(load1);
  } else {
    unmeasured("load");
  }

  auto net = readNetCounters(&error);
  if (!net) {
    unmeasured("network");
    last_net_.clear();  // the next rates start over
  } else {
    if (seconds > 0) {
      uint64_t rx = 0;
      uint64_t tx = 0;
      for (const auto& [name, counters] : *net) {
        if (name == "lo") continue;
        auto last = last_net_.find(name);
        // Interfaces that appeared since the last sample, or whose counters were reset, count 0.
        if (last == last_net_.end()) continue;
        if (counters.rx >= last->second.rx) rx += counters.rx - last->second.rx;
        if (counters.tx >= last->second.tx) tx += counters.tx - last->second.tx;
      }
      health.set_net_rx_bytes_per_s(static_cast<double>(rx) / seconds);
      health.set_net_tx_bytes_per_s(static_cast<double>(tx) / seconds);
    }
    last_net_ = std::move(*net);
  }

  if (nvml_) {
    for (auto& gpu : nvml_->sample()) {
      if (allowed(gpu.index())) *health.add_gpus() = std::move(gpu);
    }
  }
  return health;
}

}  // namespace ringmaster::agent
