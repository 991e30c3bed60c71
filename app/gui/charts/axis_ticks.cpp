#include "charts/axis_ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ringmaster::gui {

double niceTickInterval(double span, int target_ticks) {
  if (!(span > 0) || !std::isfinite(span) || target_ticks < 1) return 1;
  const double raw = span / target_ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw * 0.999) return m * magnitude;
  }
  return 10 * magnitude;
}

double niceTickIntervalWithin(double lo, double hi, int target_ticks, int min_ticks) {
  double interval = niceTickInterval(hi - lo, target_ticks);
  if (!(hi > lo) || !std::isfinite(hi - lo)) return interval;
  for (int i = 0; i < 6; ++i) {
    if (static_cast<int>(tickValues(lo, hi, interval).size()) >= min_ticks) break;
    // One rung down the ladder: 5 -> 2, 2 -> 1, 1 -> 0.5.
    const double magnitude = std::pow(10.0, std::floor(std::log10(interval) + 1e-9));
    const double mantissa = interval / magnitude;
    interval = mantissa > 4 ? 2 * magnitude : mantissa > 1.5 ? magnitude : magnitude / 2;
  }
  return interval;
}

std::vector<double> logTicks(double lo, double hi, int max_ticks) {
  std::vector<double> ticks;
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo) || hi - lo > 600) return ticks;
  max_ticks = std::max(max_ticks, 2);
  // m x 10^k for each mantissa m of a set, within [lo, hi] (a little slack for rounding).
  const auto mantissaTicks = [&](std::initializer_list<double> mantissas) {
    std::vector<double> out;
    for (double k = std::floor(lo); k <= std::ceil(hi); ++k) {
      for (double m : mantissas) {
        const double t = k + std::log10(m);
        if (t >= lo - 1e-9 && t <= hi + 1e-9) out.push_back(t);
      }
    }
    return out;
  };
  std::vector<double> fewest;
  for (auto mantissas :
       {std::initializer_list<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 5}, {1, 3}, {1}}) {
    std::vector<double> out = mantissaTicks(mantissas);
    if (out.size() < 2) {  // a sparser set leaves one label: the denser one, a little crowded
      if (!fewest.empty()) return fewest;
      break;  // even 1-9 x 10^k gives fewer than 2: a small factor, see below
    }
    if (static_cast<int>(out.size()) <= max_ticks) return out;
    fewest = std::move(out);
  }
  if (!fewest.empty()) {  // whole decades, too many: every 2nd, 5th, 10th, 20th ...
    for (double every = 2;; every *= every == 2 || every == 20 || every == 200 ? 2.5 : 2) {
      std::vector<double> out;
      for (double k = std::ceil(lo - 1e-9); k <= hi + 1e-9; ++k) {
        if (std::fmod(k, every) == 0) out.push_back(k);
      }
      if (static_cast<int>(out.size()) <= max_ticks) return out;
    }
  }
  // Less than a factor of ~1.1: round steps of the values themselves, at their logs.
  const double a = std::pow(10.0, lo), b = std::pow(10.0, hi);
  const double interval = niceTickIntervalWithin(a, b, max_ticks, 2);
  for (double v : tickValues(a, b, interval)) {
    if (v > 0) ticks.push_back(std::log10(v));
  }
  return ticks;
}

double niceTimeInterval(double span_s, int target_ticks) {
  if (!(span_s > 0) || !std::isfinite(span_s) || target_ticks < 1) return 1;
  static constexpr double kSteps[] = {1,     2,     5,     10,    15,     30,    60,
                                      120,   300,   600,   900,   1800,   3600,  7200,
                                      10800, 21600, 43200, 86400, 172800, 604800};
  const double raw = span_s / target_ticks;
  if (raw < 1) return niceTickInterval(span_s, target_ticks);
  for (double s : kSteps) {
    if (s >= raw * 0.999) return s;
  }
  return niceTickInterval(span_s / 86400, target_ticks) * 86400;
}

std::vector<double> tickValues(double lo, double hi, double interval, double offset) {
  std::vector<double> out;
  if (!(interval > 0) || !(lo <= hi) || (hi - lo) / interval > 1000) return out;
  const double first = std::ceil((lo - offset) / interval - 1e-9);
  for (double k = first;; k += 1) {
    const double v = offset + k * interval;
    if (v > hi + interval * 1e-9) break;
    out.push_back(std::abs(v) < interval * 1e-9 ? 0.0 : v);
  }
  return out;
}

std::string tickLabelFormat(double interval, double max_abs) {
  if (!(interval > 0)) return "%.3g";
  if (max_abs >= 1e7 || interval < 1e-4) {
    // Enough significant digits for neighbouring ticks to differ: 0.0198 +- 5e-7 read "0.0198"
    // on every label with three.
    const double digits = std::ceil(std::log10(std::max(max_abs, interval) / interval)) + 1;
    return "%." + std::to_string(static_cast<int>(std::clamp(digits, 3.0, 15.0))) + "g";
  }
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(interval) - 1e-9)));
  return "%." + std::to_string(decimals) + "f";
}

std::string formatElapsed(double seconds, double interval) {
  if (!std::isfinite(seconds)) return "?";
  const bool millis = interval < 1;
  const auto total_ms = static_cast<long long>(std::llround(std::abs(seconds) * 1000));
  const long long whole = millis ? total_ms / 1000 : (total_ms + 500) / 1000;
  char text[64];
  std::snprintf(text, sizeof text, "%s%lld:%02lld:%02lld", seconds < 0 && total_ms > 0 ? "-" : "",
                whole / 3600, whole / 60 % 60, whole % 60);
  std::string out = text;
  if (millis) {
    std::snprintf(text, sizeof text, ".%03lld", total_ms % 1000);
    out += text;
  }
  return out;
}

}  // namespace ringmaster::gui
