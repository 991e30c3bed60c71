#include "ringmaster/train/data.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace ringmaster::train {
namespace {

namespace fs = std::filesystem;

class CsvTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("rm_csv_test_" + std::to_string(::getpid()) + "_" +
                                     testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  Result<Dataset> load(const std::string& text, Task task = Task::kClassification) {
    CsvOptions o;
    o.path = write("train.csv", text);
    o.task = task;
    return loadCsv(o);
  }

  // The load fails and its message contains every fragment.
  void expectError(const std::string& text, const std::vector<std::string>& fragments,
                   Task task = Task::kClassification) {
    Result<Dataset> data = load(text, task);
    ASSERT_FALSE(data.isOk()) << "expected an error for:\n" << text;
    const std::string message = data.status().message();
    for (const std::string& f : fragments) {
      EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' not in: " << message;
    }
  }

  fs::path dir_;
};

TEST_F(CsvTest, ReadsNumericColumnsWithTheLabelAnywhere) {
  Result<Dataset> data = load("a, label ,b\r\n1.5,0,-2\r\n\r\n+3,2,4e1\n  7 , 1 , 0.25\n");
  ASSERT_TRUE(data.isOk()) << data.status().toString();
  EXPECT_EQ(data->features, 2u);
  EXPECT_EQ(data->size(), 3u);
  EXPECT_EQ(data->classes, 3u);
  EXPECT_EQ(data->feature_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(data->x, (std::vector<float>{1.5f, -2.0f, 3.0f, 40.0f, 7.0f, 0.25f}));
  EXPECT_EQ(data->y, (std::vector<float>{0.0f, 2.0f, 1.0f}));
}

TEST_F(CsvTest, RegressionLabelsMayBeAnyNumber) {
  Result<Dataset> data = load("x,label\n1,0.5\n2,-3.25\n", Task::kRegression);
  ASSERT_TRUE(data.isOk()) << data.status().toString();
  EXPECT_EQ(data->classes, 0u);
  EXPECT_EQ(data->y, (std::vector<float>{0.5f, -3.25f}));
}

TEST_F(CsvTest, MissingLabelColumnNamesTheColumnsThatExist) {
  expectError("a,b,target\n1,2,0\n", {"train.csv:1:", "no label column 'label'", "'target'"});
}

TEST_F(CsvTest, NonNumericCellNamesLineColumnAndValue) {
  expectError("a,b,label\n1,2,0\n3,abc,1\n",
              {"train.csv:3:", "column 2 ('b')", "expected a number, got 'abc'"});
}

TEST_F(CsvTest, EmptyCellAndNonFiniteNumbersAreRejected) {
  expectError("a,label\n,1\n", {"train.csv:2:", "column 1 ('a')", "empty cell"});
  expectError("a,label\nnan,1\n", {"train.csv:2:", "finite"});
  expectError("a,label\n1e999,1\n", {"train.csv:2:", "out of the float range"});
}

TEST_F(CsvTest, EmptyFileSaysSo) {
  expectError("", {"train.csv", "empty file"});
  expectError("\n  \n\r\n", {"train.csv", "empty file"});
}

TEST_F(CsvTest, HeaderWithoutRowsSaysSo) {
  expectError("a,label\n", {"train.csv", "no data rows"});
}

TEST_F(CsvTest, RaggedRowsNameTheLineAndCounts) {
  expectError("a,b,label\n1,2,0\n1,2\n", {"train.csv:3:", "expected 3 cells", "got 2"});
  expectError("a,b,label\n1,2,0,9\n", {"train.csv:2:", "expected 3 cells", "got 4"});
}

TEST_F(CsvTest, ClassLabelsMustBeNonNegativeIntegers) {
  expectError("a,label\n1,0\n2,1.5\n", {"train.csv:3:", "column 2 ('label')", "integer >= 0"});
  expectError("a,label\n1,-1\n", {"train.csv:2:", "integer >= 0"});
  expectError("a,label\n1,0\n2,0\n", {"single class"});
}

TEST_F(CsvTest, LabelOnlyAndDuplicateLabelHeadersAreRejected) {
  expectError("label\n1\n", {"train.csv:1:", "at least one feature column"});
  expectError("label,a,label\n1,2,3\n", {"train.csv:1:", "appears twice", "columns 1 and 3"});
}

TEST(Csv, MissingFileNamesThePath) {
  CsvOptions o;
  o.path = "/nonexistent/dir/train.csv";
  Result<Dataset> data = loadCsv(o);
  ASSERT_FALSE(data.isOk());
  EXPECT_EQ(data.status().code(), ErrorCode::kIo);
  EXPECT_NE(data.status().message().find("/nonexistent/dir/train.csv"), std::string::npos);
}

TEST(Synthetic, ClassificationIsDeterministicAndBalanced) {
  SyntheticOptions o;
  o.samples = 1000;
  o.features = 8;
  o.classes = 4;
  o.seed = 5;
  Result<Dataset> a = makeSynthetic(o);
  Result<Dataset> b = makeSynthetic(o);
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_EQ(a->x, b->x);
  EXPECT_EQ(a->y, b->y);
  EXPECT_EQ(a->size(), 1000u);
  EXPECT_EQ(a->x.size(), 8000u);
  EXPECT_EQ(a->classes, 4u);
  std::vector<size_t> counts(4, 0);
  for (float y : a->y) ++counts[static_cast<size_t>(y)];
  EXPECT_EQ(counts, (std::vector<size_t>{250, 250, 250, 250}));
  o.seed = 6;
  Result<Dataset> c = makeSynthetic(o);
  ASSERT_TRUE(c.isOk());
  EXPECT_NE(a->x, c->x);
}

TEST(Synthetic, RegressionTargetsHaveAboutUnitVariance) {
  SyntheticOptions o;
  o.task = Task::kRegression;
  o.samples = 4000;
  o.features = 16;
  Result<Dataset> data = makeSynthetic(o);
  ASSERT_TRUE(data.isOk());
  EXPECT_EQ(data->classes, 0u);
  double sum = 0.0;
  double sum_sq = 0.0;
  for (float y : data->y) {
    sum += y;
    sum_sq += static_cast<double>(y) * y;
  }
  const double mean = sum / 4000.0;
  const double variance = sum_sq / 4000.0 - mean * mean;
  EXPECT_GT(variance, 0.3);
  EXPECT_LT(variance, 3.0);
}

TEST(Synthetic, RejectsEmptyShapesNamingTheField) {
  SyntheticOptions o;
  o.samples = 0;
  Result<Dataset> data = makeSynthetic(o);
  ASSERT_FALSE(data.isOk());
  EXPECT_NE(data.status().message().find("dataset.samples"), std::string::npos);
  o.samples = 10;
  o.classes = 1;
  data = makeSynthetic(o);
  ASSERT_FALSE(data.isOk());
  EXPECT_NE(data.status().message().find("dataset.classes"), std::string::npos);
}

TEST(Split, HoldsOutASeededFractionWithoutOverlap) {
  Dataset all;
  all.features = 1;
  all.classes = 2;
  for (int i = 0; i < 100; ++i) {
    all.x.push_back(static_cast<float>(i));
    all.y.push_back(static_cast<float>(i % 2));
  }
  Result<Split> split = splitTrainEval(all, 0.1, 3);
  ASSERT_TRUE(split.isOk());
  EXPECT_EQ(split->train.size(), 90u);
  EXPECT_EQ(split->eval.size(), 10u);
  std::set<float> seen;
  for (const Dataset* part : {&split->train, &split->eval}) {
    for (size_t i = 0; i < part->size(); ++i) {
      EXPECT_TRUE(seen.insert(part->x[i]).second);
      EXPECT_EQ(part->y[i], static_cast<float>(static_cast<int>(part->x[i]) % 2));
    }
  }
  EXPECT_EQ(seen.size(), 100u);
  Result<Split> again = splitTrainEval(all, 0.1, 3);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->eval.x, split->eval.x);
  Result<Split> other = splitTrainEval(all, 0.1, 4);
  ASSERT_TRUE(other.isOk());
  EXPECT_NE(other->eval.x, split->eval.x);
  EXPECT_FALSE(splitTrainEval(all, 1.0, 3).isOk());
}

TEST(Standardizer, UsesTrainingStatisticsForBothSplits) {
  Dataset train;
  train.features = 2;
  train.x = {1, 5, 3, 5, 5, 5};  // feature 0: mean 3, std sqrt(8/3); feature 1 constant
  train.y = {0, 1, 0};
  Dataset eval = train;
  eval.x = {3, 6};
  eval.y = {1};
  const Standardizer s = fitStandardizer(train);
  EXPECT_FLOAT_EQ(s.mean[0], 3.0f);
  EXPECT_FLOAT_EQ(s.inv_std[0], static_cast<float>(1.0 / std::sqrt(8.0 / 3.0)));
  EXPECT_FLOAT_EQ(s.inv_std[1], 1.0f);
  applyStandardizer(s, &train);
  applyStandardizer(s, &eval);
  EXPECT_NEAR(train.x[0] + train.x[2] + train.x[4], 0.0f, 1e-6f);
  EXPECT_FLOAT_EQ(eval.x[0], 0.0f);
  EXPECT_FLOAT_EQ(eval.x[1], 1.0f);
}

// IDX files written by the test: `count` images of rows x cols pixels (pixel value = image index
// + pixel index, mod 256) and their labels (image index mod classes).
class IdxTest : public CsvTest {
 protected:
  static std::string header(uint8_t type, const std::vector<uint32_t>& dims) {
    std::string out = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
    for (uint32_t d : dims) {
      for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((d >> shift) & 0xff);
    }
    return out;
  }
  static std::string images(uint32_t count, uint32_t rows, uint32_t cols) {
    std::string out = header(0x08, {count, rows, cols});
    for (uint32_t i = 0; i < count; ++i) {
      for (uint32_t p = 0; p < rows * cols; ++p) out += static_cast<char>((i + p) & 0xff);
    }
    return out;
  }
  static std::string labels(uint32_t count, uint32_t classes) {
    std::string out = header(0x08, {count});
    for (uint32_t i = 0; i < count; ++i) out += static_cast<char>(i % classes);
    return out;
  }
  std::string writeGz(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    gzFile file = gzopen(path.c_str(), "wb");
    EXPECT_NE(file, nullptr);
    EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    gzclose(file);
    return path;
  }
  void expectError(const IdxFiles& files, const std::vector<std::string>& fragments) {
    Result<Dataset> data = loadIdx(files);
    ASSERT_FALSE(data.isOk());
    for (const std::string& f : fragments) {
      EXPECT_NE(data.status().message().find(f), std::string::npos)
          << "'" << f << "' not in: " << data.status().message();
    }
  }
};

TEST_F(IdxTest, ReadsGzippedAndPlainFilesAlike) {
  const IdxFiles gz{writeGz("img.gz", images(30, 3, 4)), writeGz("lab.gz", labels(30, 3))};
  const IdxFiles plain{write("img", images(30, 3, 4)), write("lab", labels(30, 3))};
  for (const IdxFiles& files : {gz, plain}) {
    Result<Dataset> data = loadIdx(files);
    ASSERT_TRUE(data.isOk()) << data.status().toString();
    EXPECT_EQ(data->size(), 30u);
    EXPECT_EQ(data->features, 12u);
    EXPECT_EQ(data->classes, 3u);
    EXPECT_EQ(data->task, Task::kClassification);
    EXPECT_EQ(data->x[0], 0.0f);
    EXPECT_EQ(data->x[12 * 7 + 5], 12.0f);  // image 7, pixel 5
    EXPECT_EQ(data->y[7], 1.0f);
    EXPECT_EQ(data->y[29], 2.0f);
  }
}

// Images are read a megabyte at a time straight into floats: values on both sides of the chunks'
// seams land where they belong, and a file that ends inside a later chunk is still short.
TEST_F(IdxTest, FilesLargerThanOneReadChunkAreReadWhole) {
  const uint32_t count = 1100, side = 32;  // 1,126,400 pixels: two chunks of 1 MiB
  const std::string bytes = images(count, side, side);
  const IdxFiles files{writeGz("big.gz", bytes), writeGz("big-labels.gz", labels(count, 4))};
  Result<Dataset> data = loadIdx(files);
  ASSERT_TRUE(data.isOk()) << data.status().toString();
  ASSERT_EQ(data->x.size(), size_t{count} * side * side);
  for (const size_t at : {size_t{0}, (size_t{1} << 20) - 1, size_t{1} << 20, data->x.size() - 1}) {
    const size_t image = at / (side * side), pixel = at % (side * side);
    EXPECT_EQ(data->x[at], static_cast<float>((image + pixel) & 0xff)) << "value " << at;
  }
  EXPECT_EQ(data->y[count - 1], static_cast<float>((count - 1) % 4));
  const std::string cut = bytes.substr(0, bytes.size() - 1000);
  expectError({writeGz("cut-big.gz", cut), files.labels},
              {"cut-big.gz", "the file ends early", "expected 1126400 values"});
}

// The floats' room is taken before the values are read: a header claiming more than the host's
// memory is refused with the sizes, not an allocation failure (a smaller lie ends early).
TEST_F(IdxTest, AHeaderBeyondTheHostsMemoryIsRefusedBeforeAnythingIsRead) {
  const IdxFiles files{writeGz("huge.gz", header(0x08, {1u << 17, 1u << 17}) + "abc"),
                       writeGz("huge-labels.gz", labels(1u << 17, 2))};
  const uint64_t memory = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                          static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if ((uint64_t{1} << 36) > memory) {
    expectError(files, {"huge.gz", "17179869184 values take 65536 MiB as floats", "MiB of memory"});
  } else {
    expectError(files, {"huge.gz", "the file ends early"});
  }
}

TEST_F(IdxTest, NamesTheFileAndWhatIsWrongWithIt) {
  const std::string good_images = write("img", images(10, 2, 2));
  const std::string good_labels = write("lab", labels(10, 2));
  expectError({dir_.string() + "/nothing", good_labels}, {"nothing", "cannot open"});
  expectError({write("csv", "a,label\n1,0\n"), good_labels}, {"csv", "not an IDX file"});
  expectError({write("float", header(0x0d, {1, 1, 1}) + "abcd"), good_labels},
              {"float", "float values (type 0x0d)", "only unsigned bytes"});
  expectError({good_labels, good_labels}, {"lab", "1 dimension(s); images have 2 or more"});
  expectError({good_images, good_images}, {"img", "3 dimension(s); labels have 1"});
  std::string short_images = images(10, 2, 2);
  short_images.pop_back();
  expectError({write("short", short_images), good_labels},
              {"short", "the file ends early", "expected 40 values"});
  expectError({write("long", images(10, 2, 2) + "x"), good_labels},
              {"long", "data past the 40 values"});
  expectError({good_images, write("nine", labels(9, 2))},
              {"holds 10 images but", "nine holds 9 labels"});
  expectError({good_images, write("zeros", labels(10, 1))}, {"zeros", "every label is 0"});
}

TEST_F(IdxTest, ATruncatedGzipIsAnErrorNotShortData) {
  const std::string path = writeGz("img.gz", images(200, 8, 8));
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string cut = write("cut.gz", bytes.substr(0, bytes.size() / 2));
  Result<Dataset> data = loadIdx({cut, write("lab", labels(200, 2))});
  ASSERT_FALSE(data.isOk());
  EXPECT_NE(data.status().message().find("cut.gz"), std::string::npos) << data.status().message();
}

TEST_F(IdxTest, FashionMnistMissingNamesTheDebianPackage) {
  Result<IdxSplitFiles> files = fashionMnistFiles(dir_.string());
  ASSERT_FALSE(files.isOk());
  EXPECT_EQ(files.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(files.status().message().find("dataset-fashion-mnist"), std::string::npos);
  EXPECT_NE(files.status().message().find("train-images-idx3-ubyte.gz"), std::string::npos);
}

TEST(Standardizer, TheGlobalOneScalesEveryPixelAlike) {
  Dataset train;
  train.features = 2;
  train.x = {0, 0, 0, 4};  // mean 1, population std sqrt(3)
  train.y = {0, 1};
  const Standardizer s = fitGlobalStandardizer(train);
  ASSERT_EQ(s.mean.size(), 2u);
  EXPECT_FLOAT_EQ(s.mean[0], 1.0f);
  EXPECT_FLOAT_EQ(s.mean[1], 1.0f);
  EXPECT_FLOAT_EQ(s.inv_std[0], static_cast<float>(1.0 / std::sqrt(3.0)));
  EXPECT_FLOAT_EQ(s.inv_std[1], s.inv_std[0]);
}

}  // namespace
}  // namespace ringmaster::train
