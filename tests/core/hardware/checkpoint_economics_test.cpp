// Checkpoint economics against a hand calculation: 8 GPUs on two hosts, one of which failed twice
// in 1,000 rank-hours of history; checkpoints cost 30 s and come every 10 minutes; then restarts
// that take 2 minutes.
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
  // Daly: sqrt(2 * 30 s * 450,000 s) = 5196.152 s (Young's), times 1 + sqrt(30 / 900,000) / 3 +
  // (30 / 900,000) / 9 = 1.0019282, less 30 s: 5176.172 s.
  EXPECT_NEAR(*e.optimal_interval_seconds, 5176.172, 1e-3);
  EXPECT_NEAR(dalyInterval(30, 450'000), 5176.172, 1e-3);
  // Lost: 1 - 600 / (450,000 * (e^(630 / 450,000) - 1)) = 0.048286 of 8 GPUs' 24 h = 9.2708
  // GPU-hours a day (Young's first order: 8 * 24 * (30/600 + 600/900,000) = 9.728).
  EXPECT_NEAR(lostFraction(600, 30, 0, 450'000), 0.0482855, 1e-6);
  EXPECT_NEAR(*e.waste_per_day_now, 9.27083, 1e-5);
  // 8 * 24 * (1 - 5176.172 / (450,000 * (e^(5206.172 / 450,000) - 1))) = 2.2085
  EXPECT_NEAR(*e.waste_per_day_optimal, 2.20850, 1e-5);
  EXPECT_EQ(*e.optimal_every_steps, 1725);  // 5176.17 s / 3 s
  EXPECT_EQ(e.advice,
            "your interval (every 10.0 min) wastes about 9.27 GPU-hours a day; every 1725 "
            "steps (86.3 min) would waste 2.21");
  EXPECT_EQ(checkpointSummary(in, e),
            "1.33 GPU-hours at risk (10.0 min since the last checkpoint, 8 GPUs); a checkpoint "
            "stops training for 30 s; these hosts fail once every 125.0 h of this job; " +
                e.advice);

  // A restart that takes 2 minutes costs every failure 120 s more on every GPU: the factor
  // e^(-120 / 450,000) on the work done, 9.3195 and 2.2591 GPU-hours a day; the interval that
  // loses least does not move.
  in.restart_seconds = 120;
  const CheckpointEconomics with_restart = checkpointEconomics(in);
  EXPECT_NEAR(*with_restart.waste_per_day_now, 9.31955, 1e-5);
  EXPECT_NEAR(*with_restart.waste_per_day_optimal, 2.25910, 1e-5);
  EXPECT_EQ(*with_restart.optimal_interval_seconds, *e.optimal_interval_seconds);
  EXPECT_EQ(checkpointSummary(in, with_restart),
            "1.33 GPU-hours at risk (10.0 min since the last checkpoint, 8 GPUs); a checkpoint "
            "stops training for 30 s, a restart 2.0 min; these hosts fail once every 125.0 h of "
            "this job; your "
            "interval (every 10.0 min) wastes about 9.32 GPU-hours a day; every 1725 steps (86.3 "
            "min) would waste 2.26");
  // A checkpoint that costs more than two MTBFs: checkpoint once an MTBF (Daly).
  EXPECT_EQ(dalyInterval(1000, 400), 400);
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

  // Cost known, interval and step time not: Daly's 1198.7 s (Young's 1200 s), and 2 ranks * 24 h
  // * 0.00333 lost = 0.16 rank-hours a day.
  in.checkpoint_seconds = 2;
  e = checkpointEconomics(in);
  EXPECT_EQ(e.advice, "checkpoints every 20.0 min would waste about 0.16 rank-hours a day");
  EXPECT_EQ(jobFailuresPerHour({"unknown"}, kRecords), 0);

  // Already near Daly's interval: said so, not "change 1199 s to 1150 s".
  in.interval_seconds = 1150;
  in.seconds_per_step = 2;
  e = checkpointEconomics(in);
  EXPECT_EQ(e.advice,
            "your interval (every 19.2 min) is about the best (every 599 steps (20.0 min)): about "
            "0.16 rank-hours a day go to checkpoints, restarts and redone work");
}

}  // namespace
}  // namespace ringmaster::hardware
