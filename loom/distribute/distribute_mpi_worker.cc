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
// MODEL_DIR is shared by the ranks (one machine). Any error aborts the whole job.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "loom/base/env.h"
#include "loom/base/logging.h"
#include "loom/distribute/distribute_test_util.h"
#include "loom/io/npy.h"

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
        "usage: distribute_mpi_worker train|shorter|mismatch|leaves|forever MODEL_DIR OUT_DIR "
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
    } else {
      comm->Abort(2, "unknown mode " + mode);
    }
  } catch (const std::exception& e) {
    comm->Abort(1, e.what());
  }
  return 0;
}

}  // namespace
}  // namespace loom::distribute

int main(int argc, char** argv) { return loom::distribute::Main(argc, argv); }
