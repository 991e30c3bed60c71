#include "ringmaster/train/data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
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

}  // namespace
}  // namespace ringmaster::train
