#pragma once
// The recent health of one agent, kept from the statuses the view receives (about one a second),
// so that sparklines can show the last minutes without asking anyone. Bounded by age and count.
// Not thread-safe: the GUI thread owns it.

#include <QList>
#include <QPointF>
#include <cstddef>
#include <deque>
#include <functional>
#include <vector>

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would
// eat: hide the macro while core's headers are parsed, whatever was included before.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/protocol/ringmaster.pb.h"
#pragma pop_macro("slots")

namespace ringmaster::gui {

struct GpuHealthPoint {
  double utilization_percent = 0;
  double memory_used_bytes = 0;
  double memory_total_bytes = 0;
  double temperature_c = 0;
  double power_w = 0;
};

struct HealthPoint {
  double time = 0;  // unix seconds of the agent's sample
  double cpu_percent = 0;
  double memory_used_bytes = 0;
  double memory_total_bytes = 0;
  double net_rx_bytes_per_s = 0;
  double net_tx_bytes_per_s = 0;
  std::vector<GpuHealthPoint> gpus;  // by position in HealthSample.gpus
};

class AgentHistory {
 public:
  // Keeps points no older than `window_s` before the newest one, and at most `max_points`.
  explicit AgentHistory(double window_s = 600, size_t max_points = 1200);

  // Adds the inventory's health sample, stamped with its health_time (or `fallback_time` when
  // the agent sent none). A sample that is not newer than the last one is ignored (the same
  // sample answered twice); returns whether it was added.
  bool add(const proto::Inventory& inventory, double fallback_time);

  const std::deque<HealthPoint>& points() const { return points_; }
  double newestTime() const { return points_.empty() ? 0 : points_.back().time; }

  // (time, value) of every point within `span_s` of the newest, for a sparkline.
  QList<QPointF> series(double span_s,
                        const std::function<double(const HealthPoint&)>& value) const;
  // The same for GPU `gpu` (by position); points where that GPU was missing are skipped.
  QList<QPointF> gpuSeries(size_t gpu, double span_s,
                           const std::function<double(const GpuHealthPoint&)>& value) const;

 private:
  double window_s_;
  size_t max_points_;
  std::deque<HealthPoint> points_;
};

}  // namespace ringmaster::gui
