// The names of the trainer's choices (activation, task, optimizer, schedule), both ways. Apart
// from the math so that validating a spec's native: section (ringmasterctl, the editor) links
// neither BLAS nor the trainer.
#include <optional>
#include <string_view>

#include "ringmaster/train/model.h"
#include "ringmaster/train/optimizer.h"

namespace ringmaster::train {

const char* activationName(Activation activation) {
  switch (activation) {
    case Activation::kRelu:
      return "relu";
    case Activation::kGelu:
      return "gelu";
    case Activation::kTanh:
      return "tanh";
  }
  return "?";
}

const char* taskName(Task task) {
  return task == Task::kClassification ? "classification" : "regression";
}

std::optional<Activation> parseActivation(std::string_view name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "gelu") return Activation::kGelu;
  if (name == "tanh") return Activation::kTanh;
  return std::nullopt;
}

std::optional<Task> parseTask(std::string_view name) {
  if (name == "classification") return Task::kClassification;
  if (name == "regression") return Task::kRegression;
  return std::nullopt;
}

const char* optimizerKindName(OptimizerKind kind) {
  return kind == OptimizerKind::kSgd ? "sgd" : "adam";
}

const char* lrScheduleName(LrSchedule schedule) {
  return schedule == LrSchedule::kConstant ? "constant" : "cosine";
}

std::optional<OptimizerKind> parseOptimizerKind(std::string_view name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adam") return OptimizerKind::kAdam;
  return std::nullopt;
}

std::optional<LrSchedule> parseLrSchedule(std::string_view name) {
  if (name == "constant") return LrSchedule::kConstant;
  if (name == "cosine") return LrSchedule::kCosine;
  return std::nullopt;
}

}  // namespace ringmaster::train
