// The distribute layer with in-process ranks (threads over InProcessCommunicators): the
// collectives, the optimizer's buckets, and the Estimator's data-parallel semantics
// (1 vs 2 vs 3 ranks, broadcast, chief-only files, stop agreement). distribute_mpi_test
// repeats the essentials across processes under mpirun.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "loom/data/iterator.h"
#include "loom/distribute/collective_ops.h"
#include "loom/distribute/distribute_test_util.h"
#include "loom/distribute/hooks.h"
#include "loom/distribute/replica_agreement.h"
#include "loom/distribute/replica_dataset.h"
#include "loom/estimator/canned.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/estimator/feature_column.h"
#include "loom/estimator/train_and_evaluate.h"
#include "loom/ops/math.h"
#include "loom/ops/random.h"
#include "loom/ops/state.h"
#include "loom/train/monitored_session.h"

namespace loom::distribute {
namespace {

using distribute_testing::MakeMlpData;
using distribute_testing::MaxRelativeDifference;
using distribute_testing::MlpInputFn;
using distribute_testing::MlpModelFn;
using estimator_testing::TempDir;

// Runs body(comm) for each of n ranks, each on its own thread; rethrows the first error.
template <typename Result>
std::vector<Result> RunRanks(int n,
                             const std::function<Result(std::shared_ptr<Communicator>)>& body) {
  std::vector<std::shared_ptr<Communicator>> comms = InProcessCommunicators(n);
  std::vector<Result> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        results[r] = body(comms[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return results;
}

// Keeps every variable's value at End.
class CaptureVariablesHook : public train::SessionRunHook {
 public:
  void End(Session& session) override {
    for (Node* node : session.graph().Variables())
      values[node->name()] = session.ReadVariable(node->name());
  }
  std::map<std::string, Tensor> values;
};

// A hook that requests a stop once the global step reaches `step`.
class StopAtHook : public train::SessionRunHook {
 public:
  explicit StopAtHook(int64_t step) : step_(step) {}
  void Begin(Graph& graph) override {
    global_step_ = train::RequireGlobalStep(graph, "StopAtHook");
  }
  train::SessionRunArgs BeforeRun(train::SessionRunContext&) override {
    return {.fetches = {global_step_}};
  }
  void AfterRun(train::SessionRunContext& context, const train::SessionRunValues& values) override {
    if (train::StepValue(values.results[0]) >= step_) context.RequestStop();
  }

 private:
  int64_t step_;
  Output global_step_;
};

RunConfig TestConfig(const std::string& model_dir) {
  return {.model_dir = model_dir,
          .tf_random_seed = 42,
          .save_summary_steps = 50,
          .save_checkpoints_steps = 100,
          .log_step_count_steps = 100,
          .session_config = {.intra_op_threads = 1}};
}

struct RankRun {
  TrainResult result;
  std::map<std::string, Tensor> values;
};

// Trains the MLP for `steps` on n in-process ranks, global batch 12; rank r's model_dir
// is dirs[r] (one shared dir when dirs has one entry).
std::vector<RankRun> TrainMlp(int n, std::vector<std::string> dirs, int64_t steps,
                              DataParallelOptions options = {}, Params params = {}) {
  const distribute_testing::MlpData data = MakeMlpData();
  return RunRanks<RankRun>(n, [&](std::shared_ptr<Communicator> comm) {
    const std::string& dir = dirs.size() == 1 ? dirs[0] : dirs[comm->rank()];
    Estimator est(MlpModelFn, DataParallelRunConfig(TestConfig(dir), comm, options), params);
    auto capture = std::make_shared<CaptureVariablesHook>();
    RankRun run;
    run.result = est.Train(MlpInputFn(data, 12), {.hooks = {capture}, .steps = steps});
    run.values = capture->values;
    return run;
  });
}

TEST(CommunicatorTest, InProcessCollectivesAgree) {
  auto results = RunRanks<std::vector<double>>(3, [](std::shared_ptr<Communicator> comm) {
    const int r = comm->rank();
    std::vector<float> v = {1.0f + r, 10.0f * r};
    comm->AllReduceSum(kFloat32, v.data(), 2);
    std::vector<std::string> all = comm->AllGather(std::string(r + 1, 'a' + r));
    int64_t root_value = BroadcastInt(*comm, 100 + r, 2);
    std::string s = r == 1 ? "from one" : "";
    BroadcastString(*comm, s, 1);
    const bool any = AnyRank(*comm, r == 2);
    const bool none = AnyRank(*comm, false);
    return std::vector<double>{v[0],
                               v[1],
                               double(all.size()),
                               double(all[2].size()),
                               double(all[1][0]),
                               double(root_value),
                               double(s == "from one"),
                               double(any),
                               double(none)};
  });
  for (const auto& r : results) {
    EXPECT_EQ(r, (std::vector<double>{6, 30, 3, 3, 'b', 102, 1, 1, 0}));
  }
}

TEST(DistributedOptimizerTest, FusesDenseGradientsIntoBucketsAndGathersSparseRows) {
  auto build = [](DistributedOptimizerOptions options) {
    auto graph = std::make_unique<Graph>();
    Scope s(*graph);
    train::GlobalStep(s);
    Output x = Placeholder(s, kFloat32, Shape{kUnknownDim, 8});
    Output id = Placeholder(s, kInt64, Shape{kUnknownDim});
    Output y = Placeholder(s, kFloat32, Shape{kUnknownDim, 1});
    RunConfig config;
    config.train_distribute = DataParallel(InProcessCommunicators(1)[0], {.optimizer = options});
    MlpModelFn(s, {{"x", x}, {"id", id}}, y, Mode::kTrain, {}, config);
    return graph;
  };
  auto count = [](const Graph& g, std::string_view op) {
    int n = 0;
    for (int i = 0; i < g.num_nodes(); ++i) n += g.node(i)->op() == op;
    return n;
  };
  // Default 4 MiB: the four dense gradients (hidden and out kernels and biases) are one
  // bucket; the embedding's rows are gathered, and updated sparsely (never densified).
  auto fused = build({});
  EXPECT_EQ(CountAllReduceBuckets(*fused), 1);
  EXPECT_EQ(CountAllGatherRows(*fused), 1);
  EXPECT_EQ(count(*fused, "SparseApplyAdam"), 1);
  EXPECT_EQ(count(*fused, "ApplyAdam"), 4);
  EXPECT_EQ(count(*fused, "UnsortedSegmentSum"), 0);
  // In reverse order: out/bias 4 bytes, out/kernel 64, hidden/bias 64 (132 in all), then
  // hidden/kernel 12x16 floats = 768 bytes, which a 500-byte threshold puts in a new bucket.
  // One bucket could overlap nothing: one synchronous AllReduceSum. Two or more: each a
  // start (run early) and a wait.
  EXPECT_EQ(count(*fused, "LoomAllReduceSum"), 1);
  EXPECT_EQ(count(*fused, "LoomAllReduceStart"), 0);
  auto two = build({.fusion_threshold_bytes = 500});
  EXPECT_EQ(count(*two, "LoomAllReduceStart"), 2);
  EXPECT_EQ(count(*two, "LoomAllReduceWait"), 2);
  EXPECT_EQ(count(*two, "LoomAllReduceSum"), 0);
  EXPECT_EQ(CountAllReduceBuckets(*build({.fusion_threshold_bytes = 500})), 2);
  EXPECT_EQ(CountAllReduceBuckets(*build({.fusion_threshold_bytes = 0})), 4);
}

TEST(CollectiveOpsTest, KernelsNeedAnAttachedCommunicator) {
  Graph graph;
  Scope s(graph);
  Output a = Const(s, Tensor::FromVector<float>({1, 2}));
  std::vector<Output> avg = AllReduceSum(s, {a});
  Session session(graph);
  try {
    session.Eval(avg[0]);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(e.message().find("AttachCommunicator"), std::string::npos) << e.message();
  }
}

TEST(CollectiveOpsTest, AverageAndGatherRowsAcrossRanks) {
  auto results = RunRanks<std::vector<float>>(2, [](std::shared_ptr<Communicator> comm) {
    Graph graph;
    Scope s(graph);
    const float r = static_cast<float>(comm->rank());
    Output a = Const(s, Tensor::FromVector<float>({1 + r, 2 * r}));
    Output b = Const(s, Tensor::FromVector<float>({4 * r}, {1, 1}));
    // A large input (1 MiB and more) is reduced on its own, in place when unshared.
    Output big =
        Mul(s, Const(s, Tensor::Zeros(kFloat32, {300000})), Const(s, Tensor::Scalar<float>(1)));
    big = Add(s, big, Const(s, Tensor::Scalar<float>(r + 1)));
    std::vector<Output> avg = AllReduceSum(s, {a, big, b});
    avg.erase(avg.begin() + 1);
    Output big_sum = AllReduceSum(s, {big})[0];
    Output scale = ReplicaScale(s, kFloat64);
    // Rank 0 sends one row, rank 1 two rows.
    Tensor idx =
        comm->rank() == 0 ? Tensor::FromVector<int64_t>({7}) : Tensor::FromVector<int64_t>({1, 7});
    Tensor rows = comm->rank() == 0 ? Tensor::FromVector<float>({2, 4}, {1, 2})
                                    : Tensor::FromVector<float>({6, 8, 10, 12}, {2, 2});
    auto [gi, gv] = AllGatherRows(s, Const(s, idx), Const(s, rows));
    Session session(graph);
    AttachCommunicator(session, comm);
    auto out = session.Run({}, {avg[0], avg[1], gi, gv, big_sum, scale});
    EXPECT_EQ(out[4].NumElements(), 300000);
    EXPECT_EQ(out[4].data<float>()[0], 3.0f);  // (0 + 1) + (1 + 1)
    EXPECT_EQ(out[4].data<float>()[299999], 3.0f);
    EXPECT_EQ(out[5].data<double>()[0], 0.5);
    std::vector<float> flat(out[0].flat<float>().begin(), out[0].flat<float>().end());
    flat.push_back(out[1].data<float>()[0]);
    EXPECT_EQ(out[1].shape(), (Shape{1, 1}));
    for (int64_t i : out[2].flat<int64_t>()) flat.push_back(static_cast<float>(i));
    for (float v : out[3].flat<float>()) flat.push_back(v);
    return flat;
  });
  // Sums, and the rows of both ranks in rank order (the optimizer scales the loss by 1/N).
  const std::vector<float> expected = {3, 2, 4, 7, 1, 7, 2, 4, 6, 8, 10, 12};
  EXPECT_EQ(results[0], expected);
  EXPECT_EQ(results[1], expected);
}

TEST(ReplicaDatasetTest, EachRankTakesItsRowsOfTheGlobalBatch) {
  // Global batches of 6 over 3 ranks: rank r takes rows [2r, 2r+2) of each; the final
  // batch of 2 rows cannot be split three ways and ends the input on every rank.
  auto results = RunRanks<std::vector<int64_t>>(3, [](std::shared_ptr<Communicator> comm) {
    auto it = ReplicaDataset(data::Range(14).Batch(6), comm).MakeIterator();
    std::vector<int64_t> seen;
    while (auto e = it->GetNext()) {
      for (int64_t v : e->begin()->second.flat<int64_t>()) seen.push_back(v);
    }
    return seen;
  });
  EXPECT_EQ(results[0], (std::vector<int64_t>{0, 1, 6, 7}));
  EXPECT_EQ(results[1], (std::vector<int64_t>{2, 3, 8, 9}));
  EXPECT_EQ(results[2], (std::vector<int64_t>{4, 5, 10, 11}));
}

// A Batch before a Repeat makes a short batch every epoch (14 rows in 6s: 6, 6, 2); every
// rank builds the whole batch there, so every rank skips the one of 2 rows that 3 ranks
// cannot share and training goes on into the next epoch (it used to end the input after
// the first epoch's 2 batches, however many steps were asked for).
TEST(ReplicaDatasetTest, AShortBatchBeforeARepeatIsSkippedNotTheEnd) {
  auto results = RunRanks<std::vector<int64_t>>(3, [](std::shared_ptr<Communicator> comm) {
    auto it = ReplicaDataset(data::Range(14).Batch(6).Repeat(3), comm).MakeIterator();
    std::vector<int64_t> seen;
    while (auto e = it->GetNext()) {
      for (int64_t v : e->begin()->second.flat<int64_t>()) seen.push_back(v);
    }
    return seen;
  });
  EXPECT_EQ(results[0], (std::vector<int64_t>{0, 1, 6, 7, 0, 1, 6, 7, 0, 1, 6, 7}));
  EXPECT_EQ(results[2], (std::vector<int64_t>{4, 5, 10, 11, 4, 5, 10, 11, 4, 5, 10, 11}));
}

TEST(ReplicaDatasetTest, AKnownBatchSizeTheRanksCannotShareIsAnError) {
  auto comms = InProcessCommunicators(4);
  try {
    ReplicaDataset(data::Range(20).Batch(10, {.drop_remainder = true}), comms[0]);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("10 rows, which 4 shards (ranks)"), std::string::npos)
        << e.message();
  }
  EXPECT_EQ((InputContext{4, 1, 4}).GetPerReplicaBatchSize(32), 8);
  EXPECT_THROW((InputContext{3, 1, 3}).GetPerReplicaBatchSize(32), Error);
}

// The global position of ReplicaDataset's default: saved by rank 1 of 2, it resumes on 3
// ranks at the next global batch; an input_fn's own shard (shard_rows false) resumes only
// on as many ranks, and the error names both.
TEST(ReplicaDatasetTest, APositionResumesOnAnotherNumberOfRanksUnlessTheInputShardsItself) {
  const data::Dataset global =
      data::FromTensorSlices(Tensor::FromVector(std::vector<int64_t>{
                                 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}))
          .Shuffle(18, {.seed = 4})
          .Batch(6)
          .Prefetch(2);
  auto saved = RunRanks<std::string>(2, [&](std::shared_ptr<Communicator> comm) {
    auto it = ReplicaDataset(global, comm).MakeIterator();
    it->GetNext();
    return it->Save();
  });
  auto rest = RunRanks<std::vector<int64_t>>(3, [&](std::shared_ptr<Communicator> comm) {
    auto it = ReplicaDataset(global, comm).MakeIterator();
    it->Restore(saved[1]);
    std::vector<int64_t> seen;
    while (auto e = it->GetNext()) {
      for (int64_t v : e->begin()->second.flat<int64_t>()) seen.push_back(v);
    }
    return seen;
  });
  std::vector<int64_t> all;
  auto plain = global.MakeIterator();
  plain->GetNext();
  while (auto e = plain->GetNext()) {
    for (int64_t v : e->begin()->second.flat<int64_t>()) all.push_back(v);
  }
  ASSERT_EQ(all.size(), 12u);
  // Global batches 1 and 2, 2 rows to each of 3 ranks.
  EXPECT_EQ(rest[0], (std::vector<int64_t>{all[0], all[1], all[6], all[7]}));
  EXPECT_EQ(rest[1], (std::vector<int64_t>{all[2], all[3], all[8], all[9]}));
  EXPECT_EQ(rest[2], (std::vector<int64_t>{all[4], all[5], all[10], all[11]}));

  auto own = [](int r, int n) { return data::Range(24).Shard(n, r).Batch(2); };
  auto own_saved = RunRanks<std::string>(2, [&](std::shared_ptr<Communicator> comm) {
    auto it = ReplicaDataset(own(comm->rank(), 2), comm, /*shard_rows=*/false).MakeIterator();
    it->GetNext();
    return it->Save();
  });
  auto comms = InProcessCommunicators(3);
  auto it = ReplicaDataset(own(0, 3), comms[0], /*shard_rows=*/false).MakeIterator();
  try {
    it->Restore(own_saved[0]);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("'ReplicaShard num_input_pipelines=2' where this pipeline has "
                               "'ReplicaShard num_input_pipelines=3'"),
              std::string::npos)
        << e.message();
  }
}

// The test: with the same seed, 1, 2 and 3 ranks train the same model (200
// steps of an MLP with an embedding, Adam, shuffled data): dense and sparse gradients.
TEST(DataParallelEstimatorTest, OneTwoAndThreeRanksTrainTheSameModel) {
  TempDir tmp;
  std::map<int, std::vector<RankRun>> runs;
  for (int n : {1, 2, 3}) runs[n] = TrainMlp(n, {tmp.Join("n" + std::to_string(n))}, 200);
  const auto& reference = runs[1][0].values;
  ASSERT_FALSE(reference.empty());
  for (int n : {2, 3}) {
    double worst = 0;
    for (const auto& [name, value] : reference) {
      if (value.dtype() == kFloat32)
        worst = std::max(worst, MaxRelativeDifference(runs[n][0].values.at(name), value));
    }
    std::printf("%d ranks: largest relative difference to 1 rank %.3g\n", n, worst);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(runs[n][r].result.global_step, 200);
      for (const auto& [name, value] : reference) {
        const Tensor& got = runs[n][r].values.at(name);
        if (value.dtype() != kFloat32) continue;
        EXPECT_LT(MaxRelativeDifference(got, value), 1e-5) << name << " with " << n << " ranks";
        // Every rank holds rank 0's values bit for bit.
        EXPECT_EQ(
            std::memcmp(got.raw_data(), runs[n][0].values.at(name).raw_data(), got.TotalBytes()), 0)
            << name;
      }
    }
  }
  // Training moved the weights: the comparison above is not between initial values.
  const Tensor& w = reference.at("out/kernel");
  Estimator fresh(MlpModelFn, TestConfig(tmp.Join("fresh")));
  fresh.Train(MlpInputFn(MakeMlpData(), 12), {.steps = 1});
  EXPECT_GT(MaxRelativeDifference(w, fresh.GetVariableValue("out/kernel")), 1e-2);
}

// A canned estimator wraps its optimizer itself (DistributeOptimizer): 1 and 2 ranks
// train the same DNNRegressor (dense columns and an embedding column: sparse gradients).
TEST(DataParallelEstimatorTest, ACannedEstimatorTrainsTheSameModelOnTwoRanks) {
  TempDir tmp;
  namespace fc = feature_column;
  const distribute_testing::MlpData data = MakeMlpData();
  std::map<int, std::vector<RankRun>> runs;
  for (int n : {1, 2}) {
    runs[n] = RunRanks<RankRun>(n, [&](std::shared_ptr<Communicator> comm) {
      DNNRegressor regressor(
          {.hidden_units = {16},
           .feature_columns = {fc::NumericColumn("x", {.shape = Shape{8}}),
                               fc::EmbeddingColumn(fc::CategoricalColumnWithIdentity("id", 50),
                                                   {.dimension = 4})},
           .optimizer = OptimizerSpec("Adam", 0.01)},
          DataParallelRunConfig(TestConfig(tmp.Join("canned" + std::to_string(n))), comm));
      auto capture = std::make_shared<CaptureVariablesHook>();
      RankRun run;
      run.result = regressor.Train(MlpInputFn(data, 12), {.hooks = {capture}, .steps = 100});
      run.values = capture->values;
      return run;
    });
  }
  ASSERT_FALSE(runs[1][0].values.empty());
  for (const auto& [name, value] : runs[1][0].values) {
    if (value.dtype() != kFloat32) continue;
    for (int r = 0; r < 2; ++r) {
      EXPECT_LT(MaxRelativeDifference(runs[2][r].values.at(name), value), 1e-5) << name;
    }
  }
  EXPECT_EQ(runs[2][1].result.global_step, 100);
}

// TrainAndEvaluate: the chief evaluates between its saves; the other rank trains along
// and neither evaluates nor writes.
TEST(DataParallelEstimatorTest, TrainAndEvaluateEvaluatesOnTheChief) {
  TempDir tmp;
  const distribute_testing::MlpData data = MakeMlpData();
  auto results = RunRanks<TrainAndEvaluateResult>(2, [&](std::shared_ptr<Communicator> comm) {
    RunConfig config = TestConfig(tmp.Join("r" + std::to_string(comm->rank())));
    config.save_checkpoints_steps = 10;
    Estimator est(MlpModelFn, DataParallelRunConfig(config, comm));
    return TrainAndEvaluate(est, {.input_fn = MlpInputFn(data, 12), .max_steps = 30},
                            {.input_fn = MlpInputFn(data, 12, /*repeat=*/false),
                             .steps = 2,
                             .start_delay_secs = 0,
                             .throttle_secs = 1e-6});
  });
  EXPECT_GE(results[0].evaluations, 1);
  EXPECT_EQ(results[0].eval_result.at("global_step"), 30);
  EXPECT_EQ(results[1].evaluations, 0);
  EXPECT_FALSE(Env::Default()->FileExists(tmp.Join("r1/eval")));
}

TEST(DataParallelEstimatorTest, OnlyTheChiefWritesFiles) {
  TempDir tmp;
  auto runs = TrainMlp(2, {tmp.Join("rank0"), tmp.Join("rank1")}, 20);
  Env* env = Env::Default();
  EXPECT_TRUE(env->FileExists(tmp.Join("rank0/checkpoint")));
  EXPECT_FALSE(env->GetChildren(tmp.Join("rank0")).empty());
  const bool rank1_exists = env->FileExists(tmp.Join("rank1"));
  EXPECT_TRUE(!rank1_exists || env->GetChildren(tmp.Join("rank1")).empty());
  EXPECT_EQ(runs[1].result.global_step, 20);
}

TEST(DataParallelEstimatorTest, BroadcastAfterInitAndAfterRestore) {
  TempDir tmp;
  // Different seeds per rank: without the broadcast the initial weights would differ.
  auto init = RunRanks<std::map<std::string, Tensor>>(2, [&](std::shared_ptr<Communicator> comm) {
    Graph graph(GraphOptions{.seed = 100 + comm->rank()});
    Scope s(graph);
    Variable w(s.WithOpName("w"), RandomNormal(s, {4, 3}));
    auto session = train::SingularMonitoredSession(
        graph, {std::make_shared<BroadcastGlobalVariablesHook>(comm)});
    return std::map<std::string, Tensor>{{"w", session->raw_session().ReadVariable("w")}};
  });
  EXPECT_EQ(std::memcmp(init[0]["w"].raw_data(), init[1]["w"].raw_data(), 48), 0);

  // Rank 0 restores a checkpoint at step 5; rank 1's model_dir is empty, so it
  // initializes; after the broadcast both continue from step 5 with the same weights.
  TrainMlp(1, {tmp.Join("a")}, 5);
  auto resumed = TrainMlp(2, {tmp.Join("a"), tmp.Join("b")}, 3);
  EXPECT_EQ(resumed[0].result.global_step, 8);
  EXPECT_EQ(resumed[1].result.global_step, 8);
  for (const auto& [name, value] : resumed[0].values) {
    EXPECT_EQ(
        std::memcmp(value.raw_data(), resumed[1].values.at(name).raw_data(), value.TotalBytes()), 0)
        << name;
  }
}

TEST(DataParallelEstimatorTest, AShorterShardStopsEveryRankAtTheSameStep) {
  TempDir tmp;
  const distribute_testing::MlpData data = MakeMlpData();
  // The input_fn shards itself: rank 0 has 10 batches, rank 1 only 7.
  auto runs = RunRanks<TrainResult>(2, [&](std::shared_ptr<Communicator> comm) {
    RunConfig config = DataParallelRunConfig(
        TestConfig(tmp.Join("r" + std::to_string(comm->rank()))), comm, {.shard_input = false});
    Estimator est(MlpModelFn, config);
    const int64_t batches = config.input_context().input_pipeline_id == 0 ? 10 : 7;
    InputFn input_fn = [&, batches](Scope&) -> InputFnResult {
      return InputFnResult(
          data::FromTensorSlices({{"x", data.x}, {"id", data.id}, {"label", data.label}})
              .Batch(6)
              .Take(batches));
    };
    return est.Train(input_fn);
  });
  EXPECT_EQ(runs[0].steps_run, 7);
  EXPECT_EQ(runs[1].steps_run, 7);
  EXPECT_EQ(runs[0].global_step, 7);
}

TEST(DataParallelEstimatorTest, AStopRequestedOnOneRankStopsAll) {
  TempDir tmp;
  const distribute_testing::MlpData data = MakeMlpData();
  auto runs = RunRanks<TrainResult>(3, [&](std::shared_ptr<Communicator> comm) {
    Estimator est(MlpModelFn, DataParallelRunConfig(
                                  TestConfig(tmp.Join("r" + std::to_string(comm->rank()))), comm));
    train::HookList hooks;
    if (comm->rank() == 2) hooks.push_back(std::make_shared<StopAtHook>(4));
    return est.Train(MlpInputFn(data, 12), {.hooks = hooks, .steps = 50});
  });
  for (const TrainResult& r : runs) EXPECT_EQ(r.global_step, 4);
}

// Train's stop arguments are in no graph, so they are compared on their own: one rank
// with max_steps, another with steps (both 20 from a fresh start, so each would stop at
// 20 and nothing else would notice) is an error on every rank naming both.
TEST(DataParallelEstimatorTest, StepsAndMaxStepsMustAgreeAcrossRanks) {
  TempDir tmp;
  const distribute_testing::MlpData data = MakeMlpData();
  auto messages = RunRanks<std::string>(2, [&](std::shared_ptr<Communicator> comm) {
    Estimator est(MlpModelFn, DataParallelRunConfig(
                                  TestConfig(tmp.Join("r" + std::to_string(comm->rank()))), comm));
    try {
      est.Train(MlpInputFn(data, 12),
                comm->rank() == 0 ? TrainOptions{.max_steps = 20} : TrainOptions{.steps = 20});
      return std::string("trained");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
      return e.message();
    }
  });
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[0].find("rank 1 has Train's steps and max_steps `steps=20` where rank 0 has "
                             "`max_steps=20`"),
            std::string::npos)
      << messages[0];
}

// CheckReplicasAgree: graphs that differ only in the per-rank seed agree; a constant of
// another value (same sizes: nothing else would notice) or another input batch is an
// error on every rank naming rank 1 and the first difference.
TEST(ReplicaAgreementTest, RanksMustBuildTheSameGraphAndInput) {
  // difference: 0 none, 1 the constant's value, 2 the input's batch size.
  auto check = [](int difference) {
    return RunRanks<std::string>(2, [difference](std::shared_ptr<Communicator> comm) {
      const bool odd = comm->rank() == 1;
      Graph graph({.seed = 42 + comm->rank()});
      Scope s(graph);
      Output noise = RandomNormal(s.WithOpName("noise"), Shape{4});
      Add(s.WithOpName("scaled"), noise,
          Const(s.WithOpName("lr"), Tensor::Scalar<float>(odd && difference == 1 ? 0.2f : 0.1f)));
      data::Dataset input = data::Range(100).Batch(odd && difference == 2 ? 8 : 4);
      try {
        CheckReplicasAgree(*comm, graph, &input);
        return std::string("agreed");
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
        return e.message();
      }
    });
  };
  EXPECT_EQ(check(0), (std::vector<std::string>{"agreed", "agreed"}));
  for (int difference : {1, 2}) {
    const std::vector<std::string> messages = check(difference);
    EXPECT_EQ(messages[0], messages[1]);  // the same error on every rank
    EXPECT_NE(messages[0].find("rank 1 did not build what rank 0 built"), std::string::npos)
        << messages[0];
    for (const char* named : difference == 1
                                 ? std::vector<const char*>{"node 'lr' Const", "[0.1]", "[0.2]"}
                                 : std::vector<const char*>{"batch_size=4", "batch_size=8"}) {
      EXPECT_NE(messages[0].find(named), std::string::npos) << named << ": " << messages[0];
    }
  }
}

TEST(DataParallelEstimatorTest, AModelFnThatDoesNotAverageIsRejected) {
  TempDir tmp;
  EXPECT_THROW(TrainMlp(2, {tmp.Join("a"), tmp.Join("b")}, 5, {}, {{"distribute", false}}), Error);
  try {
    TrainMlp(1, {tmp.Join("c")}, 5, {}, {{"distribute", false}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(e.message().find("DistributeOptimizer"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace loom::distribute
