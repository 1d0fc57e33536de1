#include "loom/cli/tf_predict.h"

#include <cstdio>
#include <set>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/estimator/tf_inputs.h"
#include "loom/estimator/tf_saved_model.h"
#include "loom/io/npy.h"

namespace loom::cli {
namespace {

// "KEY=FILE" -> {KEY, FILE}.
std::pair<std::string, std::string> SplitAssignment(const std::string& flag, const std::string& s) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
    throw InvalidArgument(flag, " '", s, "': expected KEY=FILE.npy or KEY=FILE.tfrecord");
  }
  return {s.substr(0, eq), s.substr(eq + 1)};
}

// A .npy array, or a TFRecord file's records (serialized tf.Examples) as a string vector.
Tensor ReadInputFile(Env* env, const std::string& key, const std::string& file) {
  if (file.ends_with(".npy")) return ReadNpy(env, file);
  for (const char* ext : {".tfrecord", ".tfrecords", ".tfrecord.gz", ".tfrecords.gz"}) {
    if (file.ends_with(ext)) return ReadTfRecordsAsStrings(env, file);
  }
  throw InvalidArgument("--input ", key, "='", file,
                        "': expected a .npy file, or a .tfrecord file of serialized "
                        "tf.Examples (use --csv FILE for CSV)");
}

}  // namespace

void AddTfPredictFlags(CLI::App* cmd, TfPredictFlags& flags) {
  cmd->add_option("--saved-model", flags.saved_model,
                  "run a TensorFlow SavedModel directory (saved_model.pb + variables/)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--graph", flags.graph, "run a frozen TensorFlow GraphDef (.pb)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--signature", flags.signature, "SavedModel signature")->capture_default_str();
  cmd->add_option("--tag", flags.tags, "SavedModel tag set (default: serve)");
  cmd->add_option("--input", flags.inputs,
                  "KEY=FILE.npy or KEY=FILE.tfrecord (serialized tf.Examples): a signature "
                  "input (for --graph, a placeholder name)");
  cmd->add_option("--csv", flags.csv,
                  "a CSV file whose header names the signature's inputs (KEY, or KEY_0, "
                  "KEY_1, ... for wider rows; for --graph, the placeholders) or, for a "
                  "tf.Example signature, its features");
  cmd->add_option("--output", flags.outputs, "--graph: a tensor to fetch, e.g. output:0");
}

void RunTfPredict(const TfPredictFlags& flags, const std::string& out_path,
                  const std::vector<std::string>& keys) {
  if (!flags.saved_model.empty() && !flags.graph.empty()) {
    throw InvalidArgument("predict: give --saved-model or --graph, not both");
  }
  CheckPredictionFile(out_path, keys);
  Env* env = Env::Default();
  std::map<std::string, Tensor> inputs;
  for (const std::string& s : flags.inputs) {
    auto [key, file] = SplitAssignment("--input", s);
    if (inputs.count(key)) throw InvalidArgument("--input ", key, " is given twice");
    inputs[key] = ReadInputFile(env, key, file);
  }
  if (!flags.csv.empty() && !inputs.empty()) {
    throw InvalidArgument("give the signature's inputs by --csv or by --input, not both");
  }
  std::unique_ptr<TfModel> model;
  std::string signature = flags.signature;
  if (!flags.saved_model.empty()) {
    if (!flags.outputs.empty())
      throw InvalidArgument("--output is for --graph; a SavedModel's signature names its outputs");
    model = TfModel::LoadSavedModel(env, flags.saved_model,
                                    std::set<std::string>(flags.tags.begin(), flags.tags.end()));
    if (!flags.csv.empty()) {
      auto it = model->signatures().find(signature);
      if (it == model->signatures().end()) {
        std::vector<std::string> names;
        for (const auto& [name, sig] : model->signatures()) names.push_back(name);
        throw NotFound("--signature ", signature, ": the SavedModel has ", StrJoin(names, ", "));
      }
      inputs = TfInputsFromCsv(env, flags.csv, it->second, signature);
    }
  } else {
    if (flags.outputs.empty()) throw InvalidArgument("--graph needs at least one --output TENSOR");
    std::map<std::string, std::string> in, out;
    for (const auto& [key, value] : inputs) in[key] = key;
    for (const std::string& o : flags.outputs) out[o] = o;
    // With --csv the inputs are the placeholders the outputs need (their names head the
    // columns).
    model = TfModel::LoadFrozenGraph(env, flags.graph, in, out);
    signature = "serving_default";
    if (!flags.csv.empty()) {
      inputs = TfInputsFromCsv(env, flags.csv, model->signatures().at(signature), signature);
    }
  }
  std::map<std::string, Tensor> outputs = model->Run(signature, inputs);
  WritePredictionFile(outputs, out_path, keys,
                      outputs.size() == 1 ? outputs.begin()->first : std::string());
}

}  // namespace loom::cli
