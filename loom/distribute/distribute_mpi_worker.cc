// One rank of the jobs distribute_mpi_test launches with `mpirun -np N`:
//   distribute_mpi_worker train MODEL_DIR OUT_DIR MAX_STEPS
//       trains the MLP of distribute_test_util.h (global batch 12) to MAX_STEPS and
//       writes this rank's final variables to OUT_DIR/rank<r>/<variable>.npy and its
//       TrainResult to OUT_DIR/rank<r>/result.txt
//   distribute_mpi_worker shorter MODEL_DIR OUT_DIR
//       the input_fn shards itself and rank r has 10 - 3r batches; one pass
//   distribute_mpi_worker mismatch MODEL_DIR OUT_DIR WHAT
//       trains 20 steps where rank 1 differs from the others in WHAT: "units" (its
//       hidden layer has 17 units, not 16), "learning_rate" (0.02, not 0.01) or "batch"
//       (a global batch of 24, not 12); "none" for no difference
//   distribute_mpi_worker leaves MODEL_DIR OUT_DIR
//       rank 1 fails at step 5 and returns from main without Abort (the others would
//       wait in the next collective forever); collective timeout 3 s
//   distribute_mpi_worker forever MODEL_DIR OUT_DIR
//       writes OUT_DIR/pid<r> and trains without end (the test kills a rank)
//   distribute_mpi_worker own_dir MODEL_DIR OUT_DIR
//       trains the MLP to step 20, rank r > 0 with model_dir MODEL_DIR_rank<r>
//   distribute_mpi_worker linear MODEL_DIR OUT_DIR EXAMPLES BATCH sgd|momentum [SELF]
//       one pass of linear regression (distribute_test_util.h) over EXAMPLES rows in
//       global batches of BATCH; with SELF ("self"), the input_fn shards itself: rank r
//       takes rows i with i % N == r in batches of BATCH + r (uneven per-rank batches)
//   distribute_mpi_worker evaluate MODEL_DIR OUT_DIR
//       trains the MLP to step 60 (checkpoints every 50), then Evaluate and Predict on
//       every rank; OUT_DIR/rank<r>/eval.txt holds "global_step loss predictions"
//   distribute_mpi_worker steps MODEL_DIR OUT_DIR MAX_STEPS_RANK0 MAX_STEPS_OTHERS
//       trains the MLP to max_steps, which differs between rank 0 and the others
//   distribute_mpi_worker stop_one MODEL_DIR OUT_DIR
//       a hook on rank 1 only requests a stop after its 7th step (max_steps 1000)
//   distribute_mpi_worker bad_record MODEL_DIR OUT_DIR [uncaught]
//       trains on a TFRecord file whose record 19 (in rank 1's rows of global batch 1)
//       is not an Example; "uncaught": the error leaves main (no Abort)
// MODEL_DIR is shared by the ranks (one machine). Any error aborts the whole job.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "loom/base/env.h"
#include "loom/base/logging.h"
#include "loom/data/file_sources.h"
#include "loom/distribute/distribute_test_util.h"
#include "loom/io/example_builder.h"
#include "loom/io/npy.h"
#include "loom/io/record_writer.h"

namespace loom::distribute {
namespace {

class CaptureVariablesHook : public train::SessionRunHook {
 public:
  void End(Session& session) override {
    for (Node* node : session.graph().Variables())
      values[node->name()] = session.ReadVariable(node->name());
  }
  std::map<std::string, Tensor> values;
};

// Throws from AfterRun at the given step (never when < 0).
class FailAtStepHook : public train::SessionRunHook {
 public:
  explicit FailAtStepHook(int64_t step) : step_(step) {}
  void AfterRun(train::SessionRunContext&, const train::SessionRunValues&) override {
    if (++runs_ == step_) throw Internal("FailAtStepHook: failing at step ", step_);
  }

 private:
  int64_t step_, runs_ = 0;
};

// Requests a stop after the given number of steps (never when < 0).
class StopAfterHook : public train::SessionRunHook {
 public:
  explicit StopAfterHook(int64_t steps) : steps_(steps) {}
  void AfterRun(train::SessionRunContext& context, const train::SessionRunValues&) override {
    if (++runs_ == steps_) context.RequestStop();
  }

 private:
  int64_t steps_, runs_ = 0;
};

RunConfig WorkerConfig(const std::string& model_dir, std::shared_ptr<Communicator> comm,
                       DataParallelOptions options = {}) {
  return DataParallelRunConfig({.model_dir = model_dir,
                                .tf_random_seed = 42,
                                .save_summary_steps = 50,
                                .save_checkpoints_steps = 50,
                                .log_step_count_steps = 100,
                                .session_config = {.intra_op_threads = 1}},
                               std::move(comm), options);
}

void WriteResult(const std::string& dir, const TrainResult& result,
                 const std::map<std::string, Tensor>& values) {
  Env* env = Env::Default();
  env->CreateDirs(dir);
  for (const auto& [name, value] : values) {
    std::string file = name;
    for (char& c : file)
      if (c == '/') c = '_';
    WriteNpy(env, JoinPath(dir, file + ".npy"), value);
  }
  std::ofstream(JoinPath(dir, "result.txt"))
      << result.global_step << " " << result.steps_run << "\n";
}

int Main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  std::shared_ptr<Communicator> comm =
      MpiCommunicator({.collective_timeout_seconds = mode == "leaves" ? 3.0 : 1800.0});
  if (comm->rank() != 0) SetMinLogLevel(LogLevel::kWarning);
  if (argc < 4)
    comm->Abort(
        2,
        "usage: distribute_mpi_worker train|shorter|mismatch|leaves|forever|linear|evaluate|steps|"
        "stop_one|bad_record|own_dir MODEL_DIR OUT_DIR "
        "[MAX_STEPS|WHAT]");
  const std::string model_dir = argv[2], out = argv[3];
  const std::string rank_dir = JoinPath(out, "rank" + std::to_string(comm->rank()));
  const distribute_testing::MlpData data = distribute_testing::MakeMlpData();
  try {
    if (mode == "train") {
      Estimator est(distribute_testing::MlpModelFn, WorkerConfig(model_dir, comm));
      auto capture = std::make_shared<CaptureVariablesHook>();
      TrainResult r = est.Train(distribute_testing::MlpInputFn(data, 12),
                                {.hooks = {capture}, .max_steps = std::stoll(argv[4])});
      WriteResult(rank_dir, r, capture->values);
    } else if (mode == "shorter") {
      RunConfig config = WorkerConfig(model_dir, comm, {.shard_input = false});
      Estimator est(distribute_testing::MlpModelFn, config);
      const int64_t batches = 10 - 3 * config.input_context().input_pipeline_id;
      TrainResult r = est.Train([&](Scope&) -> InputFnResult {
        return InputFnResult(
            data::FromTensorSlices({{"x", data.x}, {"id", data.id}, {"label", data.label}})
                .Batch(6)
                .Take(batches));
      });
      WriteResult(rank_dir, r, {});
    } else if (mode == "mismatch") {
      const std::string what = argc > 4 ? argv[4] : "";
      const bool odd = comm->rank() == 1;
      Params params;
      if (odd && what == "units") params["hidden_units"] = int64_t{17};
      if (odd && what == "learning_rate") params["learning_rate"] = 0.02;
      const int64_t batch = odd && what == "batch" ? 24 : 12;
      Estimator est(distribute_testing::MlpModelFn, WorkerConfig(model_dir, comm), params);
      TrainResult r = est.Train(distribute_testing::MlpInputFn(data, batch), {.max_steps = 20});
      WriteResult(rank_dir, r, {});
    } else if (mode == "leaves") {
      Estimator est(distribute_testing::MlpModelFn, WorkerConfig(model_dir, comm));
      auto fail = std::make_shared<FailAtStepHook>(comm->rank() == 1 ? 5 : -1);
      try {
        est.Train(distribute_testing::MlpInputFn(data, 12), {.hooks = {fail}, .max_steps = 1000});
      } catch (const Error& e) {
        std::fprintf(stderr, "rank %d returns after: %s\n", comm->rank(), e.what());
        return 0;  // what the test is about: no Abort
      }
      WriteResult(rank_dir, {}, {});
    } else if (mode == "forever") {
      Env::Default()->CreateDirs(out);
      std::ofstream(JoinPath(out, "pid" + std::to_string(comm->rank()))) << ::getpid() << "\n";
      Estimator est(distribute_testing::MlpModelFn, WorkerConfig(model_dir, comm));
      est.Train(distribute_testing::MlpInputFn(data, 12));
    } else if (mode == "own_dir") {
      // Rank r > 0 trains with model_dir MODEL_DIR_rank<r> (a local disk per host).
      const std::string own =
          comm->rank() == 0 ? model_dir : StrCat(model_dir, "_rank", comm->rank());
      Estimator est(distribute_testing::MlpModelFn, WorkerConfig(own, comm));
      TrainResult r = est.Train(distribute_testing::MlpInputFn(data, 12), {.max_steps = 20});
      WriteResult(rank_dir, r, {});
    } else if (mode == "linear") {
      const int64_t examples = std::stoll(argv[4]), batch = std::stoll(argv[5]);
      const bool self = argc > 7 && std::string(argv[7]) == "self";
      RunConfig config = WorkerConfig(model_dir, comm, {.shard_input = !self});
      const distribute_testing::MlpData linear = distribute_testing::MakeLinearData(examples);
      Estimator est(distribute_testing::LinearModelFn, config,
                    {{"optimizer", std::string(argv[6])}});
      const InputContext context = config.input_context();
      auto capture = std::make_shared<CaptureVariablesHook>();
      TrainResult r = est.Train(
          [&](Scope&) -> InputFnResult {
            data::Dataset ds = data::FromTensorSlices({{"x", linear.x}, {"label", linear.label}});
            if (!self) return InputFnResult(ds.Batch(batch));
            return InputFnResult(ds.Shard(context.num_input_pipelines, context.input_pipeline_id)
                                     .Batch(batch + context.input_pipeline_id));
          },
          {.hooks = {capture}});
      WriteResult(rank_dir, r, capture->values);
    } else if (mode == "evaluate") {
      Estimator est(distribute_testing::MlpModelFn, WorkerConfig(model_dir, comm));
      est.Train(distribute_testing::MlpInputFn(data, 12), {.max_steps = 60});
      std::map<std::string, double> metrics =
          est.Evaluate(distribute_testing::MlpInputFn(data, 12, /*repeat=*/false));
      int64_t predictions = 0;
      for (const Prediction& p : est.Predict(distribute_testing::MlpInputFn(data, 12, false))) {
        predictions += p.at("predictions").NumElements();
      }
      Env::Default()->CreateDirs(rank_dir);
      std::ofstream(JoinPath(rank_dir, "eval.txt"))
          << static_cast<int64_t>(metrics.at("global_step")) << " " << metrics.at("loss") << " "
          << predictions << "\n";
    } else if (mode == "steps") {
      Estimator est(distribute_testing::MlpModelFn, WorkerConfig(model_dir, comm));
      const int64_t max_steps = std::stoll(argv[comm->rank() == 0 ? 4 : 5]);
      TrainResult r = est.Train(distribute_testing::MlpInputFn(data, 12), {.max_steps = max_steps});
      WriteResult(rank_dir, r, {});
    } else if (mode == "stop_one") {
      Estimator est(distribute_testing::MlpModelFn, WorkerConfig(model_dir, comm));
      auto stop = std::make_shared<StopAfterHook>(comm->rank() == 1 ? 7 : -1);
      TrainResult r =
          est.Train(distribute_testing::MlpInputFn(data, 12), {.hooks = {stop}, .max_steps = 1000});
      WriteResult(rank_dir, r, {});
    } else if (mode == "bad_record") {
      // Rank 0 writes the file (the same path on every rank: it is part of the pipeline's
      // identity); the all-gather makes the others wait for it.
      const std::string file = JoinPath(out, "train.tfrecord");
      Env::Default()->CreateDirs(out);
      if (comm->rank() == 0) {
        auto writer = RecordWriter::Open(Env::Default(), file, {});
        for (int64_t i = 0; i < 48; ++i) {
          std::vector<float> x(8);
          for (int j = 0; j < 8; ++j) x[j] = data.x.data<float>()[i * 8 + j];
          writer->WriteRecord(i == 19 ? std::string("\xff\xff not an Example")
                                      : ExampleBuilder()
                                            .AddFloats("x", x)
                                            .AddInt64s("id", {data.id.data<int64_t>()[i]})
                                            .AddFloats("label", {data.label.data<float>()[i]})
                                            .Serialize());
        }
      }
      comm->AllGather("");
      Estimator est(distribute_testing::MlpModelFn, WorkerConfig(model_dir, comm));
      TrainResult r = est.Train([&](Scope&) -> InputFnResult {
        return InputFnResult(
            data::ParseExamples(data::TFRecordDataset({file}, {.origin_key = "origin"}).Batch(12),
                                {.fixed = {{"x", {.dtype = kFloat32, .shape = Shape({8})}},
                                           {"id", {.dtype = kInt64}},
                                           {"label", {.dtype = kFloat32, .shape = Shape({1})}}}},
                                {.origin_key = "origin"}));
      });
      WriteResult(rank_dir, r, {});
    } else {
      comm->Abort(2, "unknown mode " + mode);
    }
  } catch (const std::exception& e) {
    // "uncaught": what a program that catches nothing does (std::terminate).
    if (mode == "bad_record" && argc > 4 && std::string(argv[4]) == "uncaught") throw;
    comm->Abort(1, e.what());
  }
  return 0;
}

}  // namespace
}  // namespace loom::distribute

int main(int argc, char** argv) { return loom::distribute::Main(argc, argv); }
