#pragma once
// Data sets for the native trainer: seeded synthetic data, numeric CSV files, IDX image files
// (MNIST, Fashion-MNIST), the held-out split and standardisation with training-split statistics.
//
// Thread safety: all functions are pure (no shared state) and may be called from any thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/train/model.h"
#include "ringmaster/util/result.h"

namespace ringmaster::train {

// Samples in memory: features row-major (size() x features), one target per sample.
struct Dataset {
  size_t features = 0;
  size_t classes = 0;  // classification: number of classes (labels are 0..classes-1); else 0
  Task task = Task::kClassification;
  std::vector<float> x;
  std::vector<float> y;  // class index as float (classification) or the value (regression)
  std::vector<std::string> feature_names;  // CSV header names; empty for synthetic data

  size_t size() const { return y.size(); }
};

// Rows of a dataset gathered into one contiguous batch, in buffers reused from batch to batch
// (a training step allocates nothing). Both trainers (CPU and GPU) gather through it.
class BatchBuffer {
 public:
  BatchBuffer(size_t batch_size, size_t features);
  // The rows `indices` of `data`, valid until the next call.
  Batch gather(const Dataset& data, const std::vector<uint32_t>& indices);

 private:
  std::vector<float> x_;
  std::vector<float> y_;
};

struct SyntheticOptions {
  Task task = Task::kClassification;
  size_t samples = 20000;
  size_t features = 32;
  size_t classes = 4;  // classification only, >= 2
  uint64_t seed = 1;
};

// Seeded data with learnable structure, identical on every rank and platform for the same options.
//   classification: a Gaussian mixture, two clusters per class (so the boundary is not linear),
//                   centres ~ N(0, 25/features) per coordinate, unit noise; a well-fit MLP scores
//                   ~99% on held-out data.
//   regression:     x ~ N(0, 1), y from a random one-hidden-layer tanh teacher (16 units) plus
//                   N(0, 0.05^2) noise; Var(y) is about 1.
Result<Dataset> makeSynthetic(const SyntheticOptions& options);

struct CsvOptions {
  std::string path;
  std::string label_column = "label";  // the target; every other column is a feature
  Task task = Task::kClassification;
};

// Reads a numeric CSV file: a header row of column names, then one sample per line; comma
// separated, surrounding spaces and a trailing '\r' ignored, blank lines skipped, no quoting
// inside numbers. Errors are Status values of the form "train.csv:7:3: column 'x2': ..." naming
// the file, the 1-based line and column (cell index), for: an unreadable or empty file, a missing
// label column, a non-numeric or non-finite cell, a ragged row, a classification label that is
// not an integer >= 0, and a file with a header but no rows.
Result<Dataset> loadCsv(const CsvOptions& options);
// The same for CSV text already in memory; `file` names it in errors (options.path is not read).
Result<Dataset> parseCsv(std::string_view text, const std::string& file, const CsvOptions& options);

// The 8x8 handwritten digits built into the trainer: 1797 samples, 64 features (pixel intensities
// 0..16), 10 classes, as scikit-learn's load_digits (a copy of the test set of UCI "Optical
// Recognition of Handwritten Digits", Alpaydin and Kaynak, CC BY 4.0). The data is
// resources/datasets/digits.csv, compiled in, so a rank needs no file on its host.
Result<Dataset> loadDigits();

// IDX files, the format of MNIST and Fashion-MNIST: images are an array of unsigned bytes of 2 or
// more dimensions (count x rows x cols), labels one of 1 (count), both big-endian headed, gzipped
// or not (zlib tells by the content, not the name). A sample's features are its pixels in file
// order as floats 0..255; classes is the largest label + 1. Errors name the file and what is
// wrong: unreadable, not IDX, not unsigned bytes, too short or too long for its header, and image
// and label counts that differ.
struct IdxFiles {
  std::string images;
  std::string labels;
};
Result<Dataset> loadIdx(const IdxFiles& files);

// Fashion-MNIST (Zalando: 60,000 training and 10,000 test images of clothes, 28x28, 10 classes)
// where Debian's dataset-fashion-mnist installs it.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";
struct IdxSplitFiles {
  IdxFiles train;
  IdxFiles test;
};
// The four files under `dir`; NOT_FOUND naming the missing file and the package to install.
Result<IdxSplitFiles> fashionMnistFiles(const std::string& dir = kFashionMnistDir);

struct Split {
  Dataset train;
  Dataset eval;
};

// Shuffles `all` with a permutation seeded by `seed` and holds out the last
// round(size * eval_fraction) samples (at least 1 when eval_fraction > 0) for evaluation.
// REQUIRES: 0 <= eval_fraction < 1. Fails when a part would be empty.
Result<Split> splitTrainEval(const Dataset& all, double eval_fraction, uint64_t seed);

// Per-feature mean and 1/stddev (population) of a training set; 1 for constant features.
struct Standardizer {
  std::vector<float> mean;
  std::vector<float> inv_std;
};
Standardizer fitStandardizer(const Dataset& train);
// One mean and 1/stddev over every value of every feature, as images are scaled (a per-pixel
// scale would blow up the near-constant border pixels of the held-out images).
Standardizer fitGlobalStandardizer(const Dataset& train);
// x = (x - mean) * inv_std for every sample. REQUIRES: matching feature count.
void applyStandardizer(const Standardizer& standardizer, Dataset* data);

}  // namespace ringmaster::train
