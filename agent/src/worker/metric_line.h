#pragma once
// One metrics record as a rank prints it: a flat JSON object of numbers on one line, which the
// agent's metric-line parser reads ({"step": 12, "loss": 0.31, ...}).

#include <cstdint>
#include <cstdio>
#include <string>

#include "ringmaster/train/trainer.h"

namespace ringmaster::agent {

class MetricLine {
 public:
  explicit MetricLine(uint64_t step) { text_ = "{\"step\": " + std::to_string(step); }
  MetricLine& add(const char* name, double value) {
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, ", \"%s\": %.10g", name, value);
    text_ += buffer;
    return *this;
  }
  // Exact for integers below 2^53 (a JSON number is read as a double).
  MetricLine& addInteger(const char* name, uint64_t value) {
    text_ += ", \"" + std::string(name) + "\": " + std::to_string(value);
    return *this;
  }
  // An evaluation: eval_loss, epoch, and accuracy (classification) or mse (regression).
  MetricLine& addEval(const train::EvalReport& eval, uint64_t epoch, train::Task task) {
    add("eval_loss", eval.loss).add("epoch", static_cast<double>(epoch));
    return task == train::Task::kClassification ? add("accuracy", eval.accuracy)
                                                : add("mse", eval.mse);
  }
  void print(std::FILE* out) {
    std::fprintf(out, "%s}\n", text_.c_str());
    std::fflush(out);
  }

 private:
  std::string text_;
};

}  // namespace ringmaster::agent
