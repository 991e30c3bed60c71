#include <string>
#include <string_view>

#include "ringmaster/train/data.h"

namespace ringmaster::train {
namespace internal {
// digits_data.cpp, generated from resources/datasets/digits.csv at configure time.
extern const std::string_view kDigitsCsv;
}  // namespace internal

Result<Dataset> loadDigits() {
  CsvOptions options;
  options.label_column = "label";
  options.task = Task::kClassification;
  RM_ASSIGN_OR_RETURN(Dataset digits,
                      parseCsv(internal::kDigitsCsv, "digits.csv (built in)", options));
  // A damaged copy in the source tree would otherwise train on something else quietly.
  if (digits.size() != 1797 || digits.features != 64 || digits.classes != 10) {
    return internalError(
        "digits.csv (built in): expected 1797 samples of 64 features in 10 "
        "classes, got " +
        std::to_string(digits.size()) + " of " + std::to_string(digits.features) + " in " +
        std::to_string(digits.classes));
  }
  return digits;
}

}  // namespace ringmaster::train
