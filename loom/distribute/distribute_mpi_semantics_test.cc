// What a data-parallel job computes and how it ends, across processes (`mpirun -np N` of
// distribute_mpi_worker): the gradient rule against a float64 reference, Evaluate and
// Predict on every rank, options that differ between ranks, a stop or an error on one
// rank. CTest label "mpi" (with distribute_mpi_test.cc, one binary).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "loom/distribute/distribute_mpi_test_util.h"

namespace loom::distribute {
namespace {

using namespace mpi_testing;  // NOLINT(google-build-using-namespace): the fixture

using distribute_testing::kLinearInputs;
using distribute_testing::LinearLabel;
using distribute_testing::LinearX;

// The linear model's kernel (kLinearInputs) and bias, in float64.
struct LinearModel {
  std::vector<double> w = std::vector<double>(kLinearInputs, 0.0);
  double b = 0;
  std::vector<double> w_accum = std::vector<double>(kLinearInputs, 0.0);
  double b_accum = 0;
};

struct Gradient {
  std::vector<double> w = std::vector<double>(kLinearInputs, 0.0);
  double b = 0;
};

// d/dw mean_i (x_i.w + b - y_i)^2 = 2/n sum_i (x_i.w + b - y_i) x_i; d/db: the same without x_i.
Gradient MeanSquaredErrorGradient(const LinearModel& m, const std::vector<int64_t>& rows) {
  Gradient g;
  for (int64_t i : rows) {
    double residual = m.b - static_cast<double>(LinearLabel(i));
    for (int j = 0; j < kLinearInputs; ++j) residual += m.w[j] * LinearX(i, j);
    for (int j = 0; j < kLinearInputs; ++j) g.w[j] += 2 * residual * LinearX(i, j);
    g.b += 2 * residual;
  }
  const double n = static_cast<double>(rows.size());
  for (double& v : g.w) v /= n;
  g.b /= n;
  return g;
}

// GradientDescent: v -= rate * g. Momentum (TF's, not Nesterov): a = momentum * a + g;
// v -= rate * a.
void Apply(LinearModel& m, const Gradient& g, const std::string& optimizer) {
  if (optimizer == "sgd") {
    for (int j = 0; j < kLinearInputs; ++j) m.w[j] -= distribute_testing::kLinearSgdRate * g.w[j];
    m.b -= distribute_testing::kLinearSgdRate * g.b;
    return;
  }
  for (int j = 0; j < kLinearInputs; ++j) {
    m.w_accum[j] = distribute_testing::kLinearMomentum * m.w_accum[j] + g.w[j];
    m.w[j] -= distribute_testing::kLinearMomentumRate * m.w_accum[j];
  }
  m.b_accum = distribute_testing::kLinearMomentum * m.b_accum + g.b;
  m.b -= distribute_testing::kLinearMomentumRate * m.b_accum;
}

std::vector<int64_t> Rows(int64_t begin, int64_t end) {
  std::vector<int64_t> rows;
  for (int64_t i = begin; i < end; ++i) rows.push_back(i);
  return rows;
}

void ExpectModel(const std::map<std::string, Tensor>& got, const LinearModel& want,
                 const std::string& what) {
  ASSERT_TRUE(got.count("linear_kernel") && got.count("linear_bias")) << what;
  const Tensor& kernel = got.at("linear_kernel");
  ASSERT_EQ(kernel.NumElements(), kLinearInputs) << what;
  // float32 against float64 over a few steps: ~1e-7 relative; a gradient summed instead of
  // averaged, or a batch lost or added, moves the weights by 1e-2 or more.
  for (int j = 0; j < kLinearInputs; ++j) {
    EXPECT_NEAR(kernel.data<float>()[j], want.w[j], 2e-6 * (1 + std::abs(want.w[j])))
        << what << ", kernel[" << j << "]";
  }
  EXPECT_NEAR(got.at("linear_bias").data<float>()[0], want.b, 2e-6 * (1 + std::abs(want.b)))
      << what << ", bias";
}

// The rule, for global batches: each step's update is the gradient of the mean loss over
// the global batch's B rows (rank r's mean over its B/N rows, averaged over the ranks),
// whatever N; a last, partial, global batch is trained by one process but ends the input
// on N > 1 ranks (they cannot take it in equal shares). 50 rows in batches of 12: one
// process takes 5 steps (the last of 2 rows), 2 and 3 ranks take 4.
TEST_F(MpiTest, GlobalBatchesUpdateByTheGlobalMeanGradientAsAFloat64Reference) {
  constexpr int64_t kExamples = 50, kBatch = 12;
  for (const std::string optimizer : {"sgd", "momentum"}) {
    for (int n : optimizer == "sgd" ? std::vector<int>{1, 2, 3} : std::vector<int>{1, 3}) {
      const std::string tag = StrCat(optimizer, n);
      Launch l = RunCommand(StrCat(Mpirun(n), LOOM_MPI_WORKER, " linear ", Path("model" + tag), " ",
                                   Path("out" + tag), " ", kExamples, " ", kBatch, " ", optimizer));
      ASSERT_EQ(l.status, 0) << l.output;
      LinearModel want;
      int64_t steps = 0;
      for (int64_t begin = 0; begin < kExamples; begin += kBatch, ++steps) {
        const int64_t end = std::min(begin + kBatch, kExamples);
        if (end - begin < kBatch && n > 1) break;
        Apply(want, MeanSquaredErrorGradient(want, Rows(begin, end)), optimizer);
      }
      for (int r = 0; r < n; ++r) {
        const std::string what = StrCat(optimizer, ", ", n, " ranks, rank ", r);
        ExpectModel(ReadRank(Path("out" + tag), r), want, what);
        EXPECT_EQ(ReadText(Path(StrCat("out", tag, "/rank", r, "/result.txt"))),
                  StrCat(steps, " ", steps, "\n"))
            << what;
      }
      if (n > 1) {
        EXPECT_NE(l.output.find("The last global batch has fewer rows than 12"), std::string::npos)
            << l.output;
      }
    }
  }
  // A global batch the ranks cannot share evenly is an error naming both.
  Launch odd = RunCommand(StrCat(Mpirun(3), LOOM_MPI_WORKER, " linear ", Path("model_odd"), " ",
                                 Path("out_odd"), " ", kExamples, " 10 sgd"));
  EXPECT_NE(odd.status, 0);
  EXPECT_NE(
      odd.output.find("InvalidArgument: the global batch of 10 rows (Batch(FromTensorSlices)) "
                      "cannot be shared evenly by 3 shards (ranks)"),
      std::string::npos)
      << odd.output;
}

// An input_fn that shards itself (shard_input = false) may give the ranks batches of other
// sizes; the update is then the AVERAGE of the ranks' mean gradients (as Horovod and DDP
// average per-rank gradients), not the mean over all rows, and the job ends when the
// first rank's input does. Rank r takes rows i % 2 == r in batches of 4 + r: 25 rows
// each, so rank 0 has 7 batches, rank 1 5 (4 of 5 rows and... exactly 5 of 5): 5 steps.
TEST_F(MpiTest, SelfShardedInputAveragesThePerRankMeanGradients) {
  constexpr int64_t kExamples = 50;
  Launch l = RunCommand(StrCat(Mpirun(2), LOOM_MPI_WORKER, " linear ", Path("model"), " ",
                               Path("out"), " ", kExamples, " 4 sgd self"));
  ASSERT_EQ(l.status, 0) << l.output;
  std::vector<std::vector<int64_t>> shard(2);
  for (int64_t i = 0; i < kExamples; ++i) shard[i % 2].push_back(i);
  LinearModel want;
  int64_t steps = 0;
  for (;; ++steps) {
    std::vector<std::vector<int64_t>> batch(2);
    bool all = true;
    for (int r = 0; r < 2; ++r) {
      const size_t size = 4 + r, begin = steps * size;
      if (begin >= shard[r].size()) {
        all = false;
        break;
      }
      batch[r].assign(
          shard[r].begin() + static_cast<std::ptrdiff_t>(begin),
          shard[r].begin() + static_cast<std::ptrdiff_t>(std::min(begin + size, shard[r].size())));
    }
    if (!all) break;
    Gradient g0 = MeanSquaredErrorGradient(want, batch[0]);
    const Gradient g1 = MeanSquaredErrorGradient(want, batch[1]);
    for (int j = 0; j < kLinearInputs; ++j) g0.w[j] = (g0.w[j] + g1.w[j]) / 2;
    g0.b = (g0.b + g1.b) / 2;
    Apply(want, g0, "sgd");
  }
  ASSERT_EQ(steps, 5);
  for (int r = 0; r < 2; ++r) {
    ExpectModel(ReadRank(Path("out"), r), want, StrCat("rank ", r));
    EXPECT_EQ(ReadText(Path(StrCat("out/rank", r, "/result.txt"))), "5 5\n");
  }
}

// Train's steps and max_steps are not in the graph, yet a rank that stops or skips alone
// leaves the others in a collective: with max_steps 20 on rank 0 and 30 on rank 1, a
// model_dir whose checkpoint is at 20 made rank 0 skip training while rank 1 waited for it
// (until the collective timeout, 1800 s). Now it is an error on every rank naming both,
// before any training.
TEST_F(MpiTest, MaxStepsThatDifferAcrossRanksIsAnErrorNamingBoth) {
  Launch same = RunCommand(
      StrCat(Mpirun(2), LOOM_MPI_WORKER, " steps ", Path("model"), " ", Path("out"), " 20 20"), 60);
  ASSERT_EQ(same.status, 0) << same.output;
  EXPECT_EQ(ReadText(Path("out/rank1/result.txt")), "20 20\n");
  for (const std::string dir : {"model", "fresh"}) {  // with a checkpoint at 20, and without
    const auto begin = std::chrono::steady_clock::now();
    Launch l = RunCommand(
        StrCat(Mpirun(2), LOOM_MPI_WORKER, " steps ", Path(dir), " ", Path("out_" + dir), " 20 30"),
        60);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    EXPECT_NE(l.status, 0) << dir << ": " << l.output;
    EXPECT_LT(seconds, 30) << dir << ": " << l.output;
    EXPECT_NE(l.output.find("rank 1 has Train's steps and max_steps `max_steps=30` where rank 0 "
                            "has `max_steps=20`"),
              std::string::npos)
        << dir << ": " << l.output;
    EXPECT_FALSE(fs::exists(Path("out_" + dir + "/rank1/result.txt"))) << dir;
  }
}

// Evaluate and Predict are not collective (TF's Estimator without eval_distribute): every
// rank evaluates the whole eval set over the newest checkpoint and predicts every row, and
// only the chief writes model_dir/eval. Train returns on every rank after the chief's last
// save, so that checkpoint is the one every rank then evaluates (rank 1 used to evaluate
// the one before, at step 50, while the chief was still writing step 60's). The metrics
// are the one-process ones.
TEST_F(MpiTest, EvaluateAndPredictOnEveryRankUseTheChiefsLastCheckpoint) {
  Launch one = RunCommand(
      StrCat(Mpirun(1), LOOM_MPI_WORKER, " evaluate ", Path("model1"), " ", Path("out1")), 60);
  ASSERT_EQ(one.status, 0) << one.output;
  const std::string want = ReadText(Path("out1/rank0/eval.txt"));
  ASSERT_EQ(want.substr(0, 3), "60 ") << want;
  const double want_loss = std::stod(want.substr(3));
  EXPECT_NE(want.find(" 240\n"), std::string::npos) << want;
  {  // the race, before the barrier, was lost 3 times in 3
    const std::string dir = "model2", out = "out2";
    Launch l =
        RunCommand(StrCat(Mpirun(2), LOOM_MPI_WORKER, " evaluate ", Path(dir), " ", Path(out)), 60);
    ASSERT_EQ(l.status, 0) << l.output;
    for (int r = 0; r < 2; ++r) {
      const std::string got = ReadText(Path(StrCat(out, "/rank", r, "/eval.txt")));
      ASSERT_EQ(got.substr(0, 3), "60 ") << "rank " << r << ": " << got;
      EXPECT_NEAR(std::stod(got.substr(3)), want_loss, 1e-4 * std::abs(want_loss)) << r;
      EXPECT_NE(got.find(" 240\n"), std::string::npos) << "rank " << r << ": " << got;
    }
    EXPECT_EQ(CountEventFiles(Path(dir + "/eval")), 1);
  }
}

// model_dir may differ per rank (a local disk per host): only rank 0's is written, the
// others take rank 0's values. Another rank's model_dir is still restored first, so a
// checkpoint of another model there aborts the job, naming the rank and that checkpoint.
TEST_F(MpiTest, ModelDirMayDifferPerRankButMustHoldNoOtherModel) {
  Launch l = RunCommand(
      StrCat(Mpirun(2), LOOM_MPI_WORKER, " own_dir ", Path("model"), " ", Path("out")), 60);
  ASSERT_EQ(l.status, 0) << l.output;
  EXPECT_EQ(ReadText(Path("out/rank1/result.txt")), "20 20\n");
  EXPECT_TRUE(fs::exists(Path("model/model.ckpt-20.safetensors")));
  EXPECT_FALSE(fs::exists(Path("model_rank1")));  // rank 1 wrote nothing
  // A one-process linear model in what becomes rank 1's model_dir.
  Launch other = RunCommand(StrCat(Mpirun(1), LOOM_MPI_WORKER, " linear ", Path("stale_rank1"), " ",
                                   Path("out_linear"), " 24 12 sgd"),
                            60);
  ASSERT_EQ(other.status, 0) << other.output;
  Launch stale = RunCommand(
      StrCat(Mpirun(2), LOOM_MPI_WORKER, " own_dir ", Path("stale"), " ", Path("out_stale")), 60);
  EXPECT_NE(stale.status, 0) << stale.output;
  EXPECT_NE(stale.output.find("rank 1 of 2 aborts the job: NotFound: checkpoint '"),
            std::string::npos)
      << stale.output;
  EXPECT_NE(stale.output.find("stale_rank1/model.ckpt-2.safetensors' has no tensor"),
            std::string::npos)
      << stale.output;
}

// A hook that asks for a stop on one rank only stops every rank after the same step (the
// stop agreement), instead of leaving the others in the next step's all-reduce.
TEST_F(MpiTest, AStopRequestedOnOneRankStopsEveryRankAtTheSameStep) {
  Launch l = RunCommand(
      StrCat(Mpirun(2), LOOM_MPI_WORKER, " stop_one ", Path("model"), " ", Path("out")), 60);
  ASSERT_EQ(l.status, 0) << l.output;
  EXPECT_EQ(ReadText(Path("out/rank0/result.txt")), "7 7\n");
  EXPECT_EQ(ReadText(Path("out/rank1/result.txt")), "7 7\n");
}

// A record that only rank 1 parses (its rows of global batch 1) fails on rank 1; the
// program aborts the job as documented, and the output names the rank, the file and the
// record, within seconds (not the collective timeout).
TEST_F(MpiTest, ABadRecordInOneRanksRowsEndsTheJobNamingTheRankAndTheRecord) {
  const auto begin = std::chrono::steady_clock::now();
  Launch l = RunCommand(
      StrCat(Mpirun(2), LOOM_MPI_WORKER, " bad_record ", Path("model"), " ", Path("out")), 60);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_NE(l.status, 0) << l.output;
  EXPECT_LT(seconds, 30) << l.output;
  EXPECT_NE(l.output.find("rank 1 of 2 aborts the job"), std::string::npos) << l.output;
  EXPECT_NE(l.output.find("DataLoss: record 19 of '"), std::string::npos) << l.output;
  EXPECT_NE(l.output.find("train.tfrecord' (17 bytes) is not a valid"), std::string::npos)
      << l.output;
  EXPECT_EQ(l.output.find("rank 0 of 2 aborts the job"), std::string::npos) << l.output;
  // A program that catches nothing ends in std::terminate on rank 1; Open MPI then ends
  // the job, naming the rank, and the C++ runtime prints the error.
  const auto uncaught_begin = std::chrono::steady_clock::now();
  Launch uncaught = RunCommand(StrCat(Mpirun(2), LOOM_MPI_WORKER, " bad_record ", Path("model2"),
                                      " ", Path("out2"), " uncaught"),
                               60);
  EXPECT_NE(uncaught.status, 0) << uncaught.output;
  EXPECT_LT(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - uncaught_begin).count(), 30)
      << uncaught.output;
  EXPECT_NE(uncaught.output.find("process rank 1"), std::string::npos) << uncaught.output;
  EXPECT_NE(uncaught.output.find("record 19 of '"), std::string::npos) << uncaught.output;
}

}  // namespace
}  // namespace loom::distribute
