// The config diff: the specs of runs side by side, "Only differences", and its screenshot.
#include "history/config_diff_view.h"

#include <gtest/gtest.h>

#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QTableWidget>
#include <QTest>

namespace ringmaster::gui {
namespace {

// The native demo as run three times: on 2 ranks, on 4 ranks with NCCL's debug output, and on 4
// ranks with a larger learning rate.
std::string demoSpec(int world_size, const std::string& nccl_debug, double lr) {
  return "name: mlp-sweep\nlauncher: native\nworld_size: " + std::to_string(world_size) +
         "\nbackend: auto\nenv:\n  NCCL_DEBUG: " + nccl_debug +
         "\n  OMP_NUM_THREADS: \"4\"\nnative:\n"
         "  model: {kind: mlp, hidden: [256, 128], activation: relu, task: classification}\n"
         "  dataset: {kind: synthetic, samples: 40000, features: 32, classes: 4, seed: 1}\n"
         "  batch_size: 64\n  epochs: 8\n"
         "  optimizer: {name: sgd, lr: " +
         QString::number(lr).toStdString() +
         ", momentum: 0.9, warmup_steps: 50, schedule: cosine}\n"
         "  checkpoint: {every_steps: 200}\n";
}

TEST(ConfigDiffView, OnlyDifferencesShowsWorldSizeAndTheEnvVarThatDiffer) {
  ConfigDiffView view({{"mlp-sweep · a1b2", demoSpec(2, "WARN", 0.05)},
                       {"mlp-sweep · c3d4", demoSpec(4, "INFO", 0.05)}});
  auto* only = view.findChild<QCheckBox*>("configOnlyDifferences");
  ASSERT_NE(only, nullptr);
  EXPECT_TRUE(only->isChecked());  // a comparison opens on what differs
  EXPECT_EQ(view.shownKeys(), (QStringList{"world_size", "env.NCCL_DEBUG"}));
  QTableWidget* table = view.table();
  ASSERT_EQ(table->columnCount(), 3);
  EXPECT_EQ(table->horizontalHeaderItem(1)->text(), "mlp-sweep · a1b2");
  // A long run label is cut in its middle (name and id ends stay), whole on hover.
  EXPECT_EQ(table->horizontalHeader()->textElideMode(), Qt::ElideMiddle);
  EXPECT_EQ(table->horizontalHeaderItem(1)->toolTip(), "mlp-sweep · a1b2");
  EXPECT_EQ(table->item(0, 1)->text(), "2");
  EXPECT_EQ(table->item(0, 2)->text(), "4");
  EXPECT_TRUE(table->item(0, 2)->font().bold());         // differs from the first run
  EXPECT_FALSE(table->item(0, 1)->font().bold());        // the first run is the reference
  EXPECT_NE(table->item(1, 0)->background(), QBrush());  // the row is tinted
  EXPECT_EQ(view.summary(), "2 of 23 keys differ");

  only->setChecked(false);  // every key, the equal ones untinted
  const QStringList all = view.shownKeys();
  EXPECT_EQ(all.size(), 23);
  EXPECT_EQ(all.front(), "name");
  EXPECT_TRUE(all.contains("native.optimizer.lr"));
  EXPECT_TRUE(all.contains("native.model.hidden"));
  const int name_row = static_cast<int>(all.indexOf("name"));
  EXPECT_EQ(table->item(name_row, 1)->background(), QBrush());
}

TEST(ConfigDiffView, RunsWithoutASpecOrWithBadYamlAreNamedAndLeftOut) {
  ConfigDiffView view({{"a", demoSpec(2, "WARN", 0.05)},
                       {"old-client-run", ""},
                       {"broken", "name: [unclosed\n"},
                       {"b", demoSpec(2, "WARN", 0.1)}});
  EXPECT_EQ(view.table()->columnCount(), 3);  // key, a, b
  EXPECT_EQ(view.shownKeys(), QStringList{"native.optimizer.lr"});
  EXPECT_NE(view.summary().indexOf("old-client-run (the history has no spec for it)"), -1)
      << view.summary().toStdString();
  EXPECT_NE(view.summary().indexOf("broken (the spec is not valid YAML (line"), -1)
      << view.summary().toStdString();
}

TEST(ConfigDiffView, Screenshot) {
  ConfigDiffView view({{"mlp-sweep · a1b2", demoSpec(2, "WARN", 0.05)},
                       {"mlp-sweep · c3d4", demoSpec(4, "INFO", 0.05)},
                       {"mlp-sweep · e5f6", demoSpec(4, "WARN", 0.2)}});
  view.resize(1000, 300);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  const QString dir = QStringLiteral(RM_BIN_DIR "/../screenshots");
  ASSERT_TRUE(QDir().mkpath(dir));
  ASSERT_TRUE(view.grab().save(dir + "/config-diff-only.png"));
  view.setOnlyDifferences(false);
  view.resize(1000, 640);
  ASSERT_TRUE(view.grab().save(dir + "/config-diff.png"));
  // Nothing clipped: each value column is as wide as its widest value.
  QTableWidget* table = view.table();
  for (int c = 0; c + 1 < table->columnCount(); ++c) {
    int widest = 0;
    for (int r = 0; r < table->rowCount(); ++r) {
      QFont font = table->item(r, c)->font();
      widest = std::max(widest, QFontMetrics(font).horizontalAdvance(table->item(r, c)->text()));
    }
    EXPECT_GE(table->columnWidth(c), widest) << "column " << c;
  }
}

}  // namespace
}  // namespace ringmaster::gui
