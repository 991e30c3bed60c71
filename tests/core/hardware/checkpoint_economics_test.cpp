// Checkpoint economics against a hand calculation: 8 GPUs on two hosts, one of which failed twice
// in 1,000 rank-hours of history; checkpoints cost 30 s and come every 10 minutes.
#include "ringmaster/hardware/checkpoint_economics.h"

#include <gtest/gtest.h>

namespace ringmaster::hardware {
namespace {

const std::vector<store::HostRecord> kRecords = {
    {"h1", 1000 * 3600.0, 2},  // 0.002 failures per rank-hour
    {"h2", 500 * 3600.0, 0},
    {"h3", 0, 0},  // never ran a rank to its end: no rate
};
const std::vector<std::string> kRankHosts = {"h1", "h1", "h1", "h1", "h2", "h2", "h2", "h2"};

TEST(CheckpointEconomics, MatchesAHandCalculation) {
  const double failures_per_hour = jobFailuresPerHour(kRankHosts, kRecords);
  EXPECT_DOUBLE_EQ(failures_per_hour, 4 * 0.002);  // MTBF 125 h

  CheckpointInputs in;
  in.devices = 8;
  in.now = 10'000;
  in.last_checkpoint = 9'400;  // 600 s ago
  in.started = 1'000;
  in.checkpoint_seconds = 30;
  in.interval_seconds = 600;  // every 200 steps of 3 s
  in.seconds_per_step = 3;
  in.failures_per_hour = failures_per_hour;
  const CheckpointEconomics e = checkpointEconomics(in);

  EXPECT_DOUBLE_EQ(e.seconds_since, 600);
  EXPECT_NEAR(e.hours_at_risk, 8 * 600 / 3600.0, 1e-12);  // 1.33 GPU-hours
  ASSERT_TRUE(e.mtbf_hours && e.optimal_interval_seconds && e.waste_per_day_now &&
              e.waste_per_day_optimal && e.optimal_every_steps);
  EXPECT_NEAR(*e.mtbf_hours, 125, 1e-9);
  // sqrt(2 * 30 s * 450,000 s) = sqrt(27,000,000) = 5196.15 s
  EXPECT_NEAR(*e.optimal_interval_seconds, 5196.152, 1e-3);
  // 8 GPUs * 24 h * (30/600 + 600/900,000) = 9.728 GPU-hours a day
  EXPECT_NEAR(*e.waste_per_day_now, 9.728, 1e-9);
  // 8 * 24 * (30/5196.15 + 5196.15/900,000) = 2.2170
  EXPECT_NEAR(*e.waste_per_day_optimal, 2.21703, 1e-5);
  EXPECT_EQ(*e.optimal_every_steps, 1732);  // 5196.15 s / 3 s
  EXPECT_EQ(e.advice,
            "your interval (every 10.0 min) wastes about 9.73 GPU-hours a day; every 1732 "
            "steps (86.6 min) would waste 2.22");
  EXPECT_EQ(checkpointSummary(in, e),
            "1.33 GPU-hours at risk (10.0 min since the last checkpoint, 8 GPUs); a checkpoint "
            "takes 30 s; these hosts fail once every 125.0 h of this job; " +
                e.advice);
}

TEST(CheckpointEconomics, SaysWhyThereIsNoSuggestion) {
  CheckpointInputs in;
  in.devices = 2;
  in.on_gpus = false;
  in.now = 4'600;
  in.started = 1'000;  // no checkpoint yet: everything since the start is at risk
  CheckpointEconomics e = checkpointEconomics(in);
  EXPECT_DOUBLE_EQ(e.hours_at_risk, 2.0);
  EXPECT_EQ(e.unit, "rank-hours");
  EXPECT_FALSE(e.mtbf_hours);
  EXPECT_EQ(e.advice, "no failure of these hosts in the history yet: no interval to suggest");
  EXPECT_EQ(checkpointSummary(in, e),
            "2.00 rank-hours at risk (60.0 min since the start, no checkpoint yet, 2 ranks); no "
            "failure of these hosts in the history yet: no interval to suggest");

  in.failures_per_hour = 0.01;
  e = checkpointEconomics(in);
  ASSERT_TRUE(e.mtbf_hours);
  EXPECT_DOUBLE_EQ(*e.mtbf_hours, 100);
  EXPECT_EQ(e.advice, "no checkpoint written yet: its cost is not measured");

  // Cost known, interval and step time not: sqrt(2 * 2 s * 360,000 s) = 1200 s, and
  // 2 ranks * 24 h * (2/1200 + 1200/720,000) = 0.16 rank-hours a day.
  in.checkpoint_seconds = 2;
  e = checkpointEconomics(in);
  EXPECT_EQ(e.advice, "checkpoints every 20.0 min would waste about 0.16 rank-hours a day");
  EXPECT_EQ(jobFailuresPerHour({"unknown"}, kRecords), 0);

  // Already near Young's interval: said so, not "change 1200 s to 1200 s".
  in.interval_seconds = 1150;
  in.seconds_per_step = 2;
  e = checkpointEconomics(in);
  EXPECT_EQ(e.advice,
            "your interval (every 19.2 min) is about the best (every 600 steps (20.0 min)): about "
            "0.16 rank-hours a day go to checkpoints and redone work");
}

}  // namespace
}  // namespace ringmaster::hardware
