#ifndef LOOM_CLI_TF_PREDICT_H_
#define LOOM_CLI_TF_PREDICT_H_

// `loom predict --saved-model DIR` / `--graph FILE.pb`: a TensorFlow model run by Loom
// (loom/estimator/tf_saved_model.h) on .npy, .tfrecord or CSV inputs (tf_inputs.h), its
// outputs written like the job predictions (WritePredictionFile).
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::cli {

struct TfPredictFlags {
  std::string saved_model;  // a SavedModel directory
  std::string graph;        // or a frozen GraphDef
  std::string signature = "serving_default";
  std::vector<std::string> tags = {"serve"};
  std::vector<std::string> inputs;   // KEY=FILE.npy|.tfrecord (for --graph: TENSOR=FILE.npy)
  std::string csv;                   // inputs by CSV header name
  std::vector<std::string> outputs;  // --graph only: TF tensor names to fetch
  bool active() const { return !saved_model.empty() || !graph.empty(); }
};

void AddTfPredictFlags(CLI::App* cmd, TfPredictFlags& flags);
void RunTfPredict(const TfPredictFlags& flags, const std::string& out_path,
                  const std::vector<std::string>& keys);

// train.cc: checks --out's extension and key count; writes `all` (rows along dim 0) as
// .csv (the selected keys, all when empty) or .npy (keys[0], else npy_default_key).
void CheckPredictionFile(const std::string& out_path, const std::vector<std::string>& keys);
void WritePredictionFile(const std::map<std::string, Tensor>& all, const std::string& out_path,
                         const std::vector<std::string>& keys, const std::string& npy_default_key);

}  // namespace loom::cli

#endif  // LOOM_CLI_TF_PREDICT_H_
