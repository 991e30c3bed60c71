#pragma once
// JobDraft: what the editor's form holds, one string per scalar exactly as typed, so that a
// value core's validator rejects ("many", "-1") survives the trip through the form and is judged
// by that validator rather than silently replaced. readJobDraft() reads a spec leniently (every
// field it can make sense of), writeJobDraft() writes the YAML that the form stands for.
//
// Defaults are the ones core applies when a key is absent, so a form filled from a spec that
// omits a key shows what will actually run.
//
// Thread safety: plain data and pure functions.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "editor/kept_keys.h"

namespace ringmaster::gui {

struct NativeDraft {
  std::string model_kind = "mlp";
  std::string hidden = "128, 64";  // comma-separated widths; empty = a linear model
  std::string activation = "relu";
  std::string task = "classification";

  std::string dataset_kind = "synthetic";
  std::string samples = "20000";
  std::string features = "32";
  std::string classes = "4";
  std::string dataset_seed = "1";  // the top-level seed when the spec gives none
  std::string csv_path;
  std::string label_column = "label";
  std::string images, labels, test_images, test_labels;  // idx
  std::string standardize = "true";
  std::string eval_fraction;  // empty: omitted (the trainer holds out 0.1)

  std::string batch_size = "64";
  std::string length_unit = "epochs";  // "epochs" or "steps"
  std::string length = "5";

  std::string optimizer = "sgd";
  std::string lr = "0.05";  // empty: omitted, like every optional line-edit value below
  std::string momentum = "0.9";
  std::string nesterov = "false";
  std::string beta1 = "0.9";
  std::string beta2 = "0.999";
  std::string eps = "1e-08";
  std::string weight_decay = "0";
  std::string warmup_steps = "0";
  std::string schedule = "cosine";

  std::string grad_accumulation = "1";
  std::string clip_norm = "0";
  std::string checkpoint_every_steps = "0";
  std::string checkpoint_dir;
  std::string checkpoint_keep = "3";
  std::string eval_every = "1";
  std::string seed = "1";

  // strategy: (all at their defaults: the section is not written)
  std::string average_every = "0";  // local_sgd.average_every; 0 = no local SGD
  std::string data_split = "iid";
  std::string compression = "none";  // none | fp16 | topk | powersgd
  std::string topk_ratio = "0.01";
  std::string powersgd_rank = "2";
  std::string pipeline_stages = "0";   // pipeline.stages; 0 = no pipeline
  std::string micro_batches = "1";     // pipeline.micro_batches
  std::string ps_servers = "0";        // parameter_server.servers; 0 = no parameter server
  std::string ps_mode = "sync";        // parameter_server.mode: sync | async
  std::string ps_max_staleness = "4";  // parameter_server.max_staleness (async)
  std::string ps_max_lead = "0";       // parameter_server.max_lead (async; 0: no bound)
};

struct PlacementDraft {
  std::string agent;
  std::string ranks = "1";
};

struct JobDraft {
  std::string header_comment;  // the '#' lines that open the file, kept when the form rewrites it
  std::string name;
  std::string description;
  std::string launcher = "native";
  std::vector<std::string> command;
  std::string workdir;
  std::string python;  // the interpreter of a .py command (empty: omitted)
  std::vector<std::pair<std::string, std::string>> env;
  bool use_placement = false;
  std::vector<PlacementDraft> placement;
  std::string world_size = "1";
  // The slurm: section, which the form does not edit: kept as it is, in place of placement and
  // world_size (a job on Slurm has neither).
  std::string slurm_yaml;
  // The tensorflow: section (TF_CONFIG's roles), which the form does not edit: kept as it is
  // while the launcher is tensorflow, the only one that reads it.
  std::string tensorflow_yaml;
  std::string backend = "auto";
  std::string max_restarts = "0";
  std::vector<std::pair<std::string, std::string>> metric_patterns;  // name, regex
  std::string stop_grace_seconds = "10";
  bool has_native = false;  // the spec had a native: mapping (kept for an unknown launcher)
  NativeDraft native;
  // What the form has no field for (a misspelt key, a restart key such as on_hang): written back
  // where it was, so that a form edit deletes nothing the person wrote.
  std::vector<KeptKey> kept;
};

// Reads what it can of `text`; nullopt when the text is not a YAML mapping at all (a syntax
// error, an empty file), in which case the form cannot stand for it.
std::optional<JobDraft> readJobDraft(std::string_view text);

// The spec the draft stands for, in the layout of resources/jobs/*.yaml.
std::string writeJobDraft(const JobDraft& draft);

}  // namespace ringmaster::gui
