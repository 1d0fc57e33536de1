// Reproducibility (docs/training.md, "Exact resume"): with every seed given, training
// writes the same bits whatever the Session's intra-op thread count (1, 2 or 4: each kernel
// and OpenBLAS split their work, never a sum's order), with or without a Prefetch and a
// parallel Map in the input, and from one run to the next. (Loom runs a step's kernels one
// after another: there is no inter-op pool to vary.) `loom train`'s side is
// CliTest.SameJobTrainsTheSameBits.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "loom/data/dataset.h"
#include "loom/estimator/canned.h"
#include "loom/estimator/feature_column.h"
#include "loom/testing/same_checkpoint.h"
#include "loom/testing/temp_dir.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

namespace fc = feature_column;

struct ReproRun {
  int intra_op_threads = 1;
  // A Prefetch of this many batches after the Batch (0: none).
  int prefetch = 0;
  // Workers of the Map before the Batch (0: it maps on the consumer's thread).
  int map_calls = 0;
};

// Trains a DNN classifier (two hidden layers, dropout, batch norm, Adam) for 40 steps over a
// shuffled, repeated array of 1024 examples of 256 features, big enough that 2 threads split the
// products and the reductions; returns the final checkpoint's path.
std::string TrainOnce(const std::string& model_dir, ReproRun run, int64_t max_steps = 40) {
  constexpr int64_t kRows = 1024, kFeatures = 256, kClasses = 4;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 1);
  Tensor x(kFloat32, {kRows, kFeatures});
  Tensor label(kInt64, {kRows});
  for (int64_t i = 0; i < kRows; ++i) {
    float score = 0;
    for (int64_t j = 0; j < kFeatures; ++j) {
      const float v = normal(rng);
      x.data<float>()[i * kFeatures + j] = v;
      score += (j % 5 == 0 ? v : 0.f);
    }
    label.data<int64_t>()[i] = std::min<int64_t>(kClasses - 1, std::max(0.f, score + 2.f));
  }
  DNNClassifier classifier(
      {.hidden_units = {128, 64},
       .feature_columns = {fc::NumericColumn("x", {.shape = {kFeatures}})},
       .n_classes = kClasses,
       .optimizer = OptimizerSpec("Adam", 1e-3),
       .dropout = 0.2,
       .batch_norm = true},
      {.model_dir = model_dir,
       .tf_random_seed = 42,  // initializers, dropout and the (unseeded) Shuffle
       .save_summary_steps = 0,
       .log_step_count_steps = 0,
       .session_config = {.intra_op_threads = run.intra_op_threads}});
  InputFn input = [&](Scope&) {
    data::Dataset d =
        data::FromTensorSlices({{"x", x}, {"label", label}})
            .Shuffle(kRows)
            .Repeat()
            .Map([](data::Element e) { return e; }, {.num_parallel_calls = run.map_calls})
            .Batch(128);
    return run.prefetch > 0 ? d.Prefetch(run.prefetch) : d;
  };
  classifier.Train(input, {.max_steps = max_steps});
  std::optional<std::string> checkpoint = classifier.LatestCheckpoint();
  EXPECT_TRUE(checkpoint.has_value()) << model_dir;
  return checkpoint.value_or("");
}

TEST(ReproducibilityTest, SameSeedSameBitsAcrossThreadsPrefetchAndRuns) {
  loom::testing::TempDir root("reproducibility");
  const std::string reference = TrainOnce(root.Join("one_thread"), {});
  ASSERT_FALSE(reference.empty());
  // The weights moved (the comparison is not between untouched initial values): the
  // first checkpoint, written after the session was created, holds the initial ones.
  const std::string first = JoinPath(root.Join("one_thread"), "model.ckpt-0");
  EXPECT_FALSE(train::LoadVariable(Env::Default(), reference, "dnn/hiddenlayer_0/kernel")
                   .Equals(train::LoadVariable(Env::Default(), first, "dnn/hiddenlayer_0/kernel")));
  const struct {
    const char* name;
    ReproRun run;
  } variants[] = {
      {"one_thread_again", {}},
      {"two_threads", {.intra_op_threads = 2}},
      {"four_threads", {.intra_op_threads = 4}},
      {"parallel_map", {.map_calls = 3}},
      {"prefetch", {.prefetch = 2}},
      {"two_threads_prefetch_parallel_map", {.intra_op_threads = 2, .prefetch = 2, .map_calls = 3}},
  };
  for (const auto& variant : variants) {
    SCOPED_TRACE(variant.name);
    const std::string other = TrainOnce(root.Join(variant.name), variant.run);
    ASSERT_FALSE(other.empty());
    // A Prefetch is a stage of the pipeline, so the saved input position names it: the
    // iterator states of runs with and without one differ, every other tensor is equal.
    const loom::testing::CheckpointKinds kinds = loom::testing::ExpectSameCheckpointTensors(
        reference, other, /*compare_iterator_states=*/variant.run.prefetch == 0);
    EXPECT_GE(kinds.tensors, 10);
    EXPECT_GE(kinds.random_streams, 1);  // the dropout's
    EXPECT_EQ(kinds.iterator_states, 1);
  }
}

// Tuning the input's speed between a checkpoint and the resume (the Map made parallel,
// the Prefetch buffer grown, or both undone) resumes the same run, as docs/training.md
// says: such knobs are not part of the pipeline's identity.
TEST(ReproducibilityTest, ResumingWithOtherPrefetchBufferOrMapParallelismIsTheSameRun) {
  loom::testing::TempDir root("reproducibility_resume");
  const ReproRun plain{.prefetch = 1}, tuned{.intra_op_threads = 2, .prefetch = 4, .map_calls = 3};
  const std::string reference = TrainOnce(root.Join("reference"), plain);
  for (bool tuned_first : {false, true}) {
    SCOPED_TRACE(tuned_first ? "tuned, then plain" : "plain, then tuned");
    const std::string dir = root.Join(tuned_first ? "tuned_first" : "plain_first");
    TrainOnce(dir, tuned_first ? tuned : plain, 20);
    const std::string resumed = TrainOnce(dir, tuned_first ? plain : tuned);
    ASSERT_FALSE(resumed.empty());
    loom::testing::ExpectSameCheckpointTensors(reference, resumed);
  }
}

}  // namespace
}  // namespace loom
