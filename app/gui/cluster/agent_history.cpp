#include "cluster/agent_history.h"

namespace ringmaster::gui {

AgentHistory::AgentHistory(double window_s, size_t max_points)
    : window_s_(window_s), max_points_(max_points) {}

bool AgentHistory::add(const proto::Inventory& inventory, double fallback_time) {
  if (!inventory.has_health()) return false;
  const double time = inventory.health_time() > 0 ? inventory.health_time() : fallback_time;
  if (!points_.empty() && time <= points_.back().time) return false;
  const proto::HealthSample& health = inventory.health();
  HealthPoint point;
  point.time = time;
  point.cpu_percent = health.cpu_percent();
  point.memory_used_bytes = static_cast<double>(health.memory_used_bytes());
  point.memory_total_bytes = static_cast<double>(health.memory_total_bytes());
  point.net_rx_bytes_per_s = health.net_rx_bytes_per_s();
  point.net_tx_bytes_per_s = health.net_tx_bytes_per_s();
  for (const auto& gpu : health.gpus()) {
    point.gpus.push_back({gpu.utilization_percent(), static_cast<double>(gpu.memory_used_bytes()),
                          static_cast<double>(gpu.memory_total_bytes()), gpu.temperature_c(),
                          gpu.power_w()});
  }
  points_.push_back(std::move(point));
  while (points_.size() > max_points_ || points_.front().time < time - window_s_) {
    points_.pop_front();
  }
  return true;
}

QList<QPointF> AgentHistory::series(double span_s,
                                    const std::function<double(const HealthPoint&)>& value) const {
  QList<QPointF> out;
  const double since = newestTime() - span_s;
  for (const auto& point : points_) {
    if (point.time >= since) out.append(QPointF(point.time, value(point)));
  }
  return out;
}

QList<QPointF> AgentHistory::gpuSeries(
    size_t gpu, double span_s, const std::function<double(const GpuHealthPoint&)>& value) const {
  QList<QPointF> out;
  const double since = newestTime() - span_s;
  for (const auto& point : points_) {
    if (point.time >= since && gpu < point.gpus.size()) {
      out.append(QPointF(point.time, value(point.gpus[gpu])));
    }
  }
  return out;
}

}  // namespace ringmaster::gui
