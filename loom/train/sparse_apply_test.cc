// Sparse (IndexedSlices) updates: equal to the dense update on the touched rows, leave
// other rows and their slots alone, sum duplicate indices, and never densify.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "loom/base/strcat.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/train/adagrad.h"
#include "loom/train/adam.h"
#include "loom/train/ftrl.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/momentum.h"
#include "loom/train/rmsprop.h"
#include "loom/train/training_ops.h"

namespace loom::train {
namespace {

constexpr int64_t kRows = 5, kCols = 3;

std::vector<double> Table() {
  std::vector<double> t(kRows * kCols);
  for (size_t i = 0; i < t.size(); ++i) t[i] = 0.1 * static_cast<double>(i) - 0.7;
  return t;
}

struct Case {
  std::string name;
  std::function<std::unique_ptr<Optimizer>()> make;
};

std::vector<Case> Cases() {
  return {
      {"GradientDescent",
       [] {
         return std::make_unique<GradientDescent>(GradientDescentOptions{.learning_rate = 0.1});
       }},
      {"Momentum",
       [] { return std::make_unique<Momentum>(MomentumOptions{.learning_rate = 0.1}); }},
      {"Nesterov",
       [] {
         return std::make_unique<Momentum>(
             MomentumOptions{.learning_rate = 0.1, .use_nesterov = true});
       }},
      {"Adam", [] { return std::make_unique<Adam>(AdamOptions{.learning_rate = 0.1}); }},
      {"Adagrad", [] { return std::make_unique<Adagrad>(AdagradOptions{.learning_rate = 0.1}); }},
      {"RMSProp",
       [] {
         return std::make_unique<RMSProp>(RMSPropOptions{.learning_rate = 0.1, .momentum = 0.5});
       }},
      {"CenteredRMSProp",
       [] {
         return std::make_unique<RMSProp>(
             RMSPropOptions{.learning_rate = 0.1, .momentum = 0.5, .centered = true});
       }},
      {"Ftrl",
       [] {
         return std::make_unique<Ftrl>(FtrlOptions{.learning_rate = 0.5,
                                                   .l1_regularization_strength = 0.01,
                                                   .l2_regularization_strength = 0.1});
       }},
  };
}

TEST(SparseApplyTest, SparseEqualsDenseOnTouchedRowsAndLeavesOthersAlone) {
  // Rows 1 and 3 are touched; row 1 twice, so its gradient is the sum of two rows.
  const std::vector<int64_t> indices = {1, 3, 1};
  const std::vector<double> values = {0.1, -0.2, 0.3, /**/ 0.5, 0.4, -0.6, /**/ 0.7, 0.05, -0.1};
  std::vector<double> dense_grad(kRows * kCols, 0.0);
  for (size_t i = 0; i < indices.size(); ++i)
    for (int64_t j = 0; j < kCols; ++j) dense_grad[indices[i] * kCols + j] += values[i * kCols + j];

  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    Graph graph;
    Scope s(graph);
    auto dense_w = Variable(s.WithOpName("dense_w"), Tensor::FromVector(Table(), {kRows, kCols}));
    auto sparse_w = Variable(s.WithOpName("sparse_w"), Tensor::FromVector(Table(), {kRows, kCols}));
    auto g = Const(s, Tensor::FromVector(dense_grad, {kRows, kCols}));
    GradOutput sparse = GradOutput::Sparse(Const(s, Tensor::FromVector(indices)),
                                           Const(s, Tensor::FromVector(values, {3, kCols})),
                                           Const(s, Tensor::FromVector<int64_t>({kRows, kCols})));
    std::unique_ptr<Optimizer> opt = c.make();
    Operation train = opt->ApplyGradients(s, {{GradOutput(g), dense_w}, {sparse, sparse_w}});
    for (int id = 0; id < graph.num_nodes(); ++id) {
      EXPECT_NE(graph.node(id)->op(), "IndexedSlicesToDense")
          << "the sparse gradient was densified";
    }
    Session session(graph);
    session.RunTarget(GlobalVariablesInitializer(s));
    for (int step = 0; step < 3; ++step) session.RunTarget(train);
    Tensor d = session.ReadVariable("dense_w");
    Tensor sp = session.ReadVariable("sparse_w");
    const std::vector<double> init = Table();
    for (int64_t r = 0; r < kRows; ++r) {
      const bool touched = r == 1 || r == 3;
      for (int64_t j = 0; j < kCols; ++j) {
        const int64_t k = r * kCols + j;
        if (touched) {
          EXPECT_NEAR(sp.data<double>()[k], d.data<double>()[k], 1e-12) << "row " << r;
          EXPECT_NE(sp.data<double>()[k], init[k]) << "row " << r;
        } else {
          EXPECT_EQ(sp.data<double>()[k], init[k]) << "untouched row " << r << " changed";
        }
      }
    }
    // Slots of untouched rows keep their initial values; touched rows match the dense slots.
    const std::map<std::string, double> initial = {
        {"momentum", 0.0}, {"m", 0.0},  {"v", 0.0},     {"accumulator", 0.1},
        {"rms", 1.0},      {"mg", 0.0}, {"accum", 0.1}, {"linear", 0.0}};
    for (const std::string& slot_name : opt->GetSlotNames()) {
      Tensor ds = session.ReadVariable(opt->GetSlot(dense_w, slot_name).node->name());
      Tensor ss = session.ReadVariable(opt->GetSlot(sparse_w, slot_name).node->name());
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t j = 0; j < kCols; ++j) {
          const int64_t k = r * kCols + j;
          if (r == 1 || r == 3) {
            EXPECT_NEAR(ss.data<double>()[k], ds.data<double>()[k], 1e-12) << slot_name;
          } else {
            EXPECT_EQ(ss.data<double>()[k], initial.at(slot_name)) << slot_name << " row " << r;
          }
        }
      }
    }
  }
}

// A NaN or Inf reaching a variable through any optimizer's update, dense or sparse, in
// either float dtype, stops the step with InvalidArgument naming the variable and the
// gradient as the source (issue 9 item 3). The NaN sits in a chunk after the first.
TEST(SparseApplyTest, NonFiniteGradientNamesTheVariableForEveryOptimizer) {
  constexpr int64_t kBig = 70000;  // several thread-pool chunks
  for (const Case& c : Cases()) {
    for (DType dtype : {kFloat32, kFloat64}) {
      for (bool sparse : {false, true}) {
        for (double poison : {std::nan(""), HUGE_VAL}) {
          SCOPED_TRACE(StrCat(c.name, " ", DTypeName(dtype), sparse ? " sparse" : " dense",
                              " poison ", poison));
          Graph graph;
          Scope s(graph);
          std::vector<double> init(kBig, 0.5), grad(kBig, 0.01);
          grad[kBig - 3] = poison;
          Tensor init_t = Tensor::FromVector(init, {kBig, 1});
          Tensor grad_t = Tensor::FromVector(grad, {kBig, 1});
          if (dtype == kFloat32) {
            init_t = Tensor::FromVector(std::vector<float>(init.begin(), init.end()), {kBig, 1});
            grad_t = Tensor::FromVector(std::vector<float>(grad.begin(), grad.end()), {kBig, 1});
          }
          auto w = Variable(s.WithOpName("dnn/hiddenlayer_0/kernel"), init_t);
          GradOutput g(Const(s, grad_t));
          if (sparse) {
            std::vector<int64_t> rows(kBig);
            for (int64_t r = 0; r < kBig; ++r) rows[r] = r;
            g = GradOutput::Sparse(Const(s, Tensor::FromVector(rows)), Const(s, grad_t),
                                   Const(s, Tensor::FromVector<int64_t>({kBig, 1})));
          }
          std::unique_ptr<Optimizer> opt = c.make();
          Operation train = opt->ApplyGradients(s, {{g, w}});
          Session session(graph, {.intra_op_threads = 2});
          session.RunTarget(GlobalVariablesInitializer(s));
          try {
            session.RunTarget(train);
            ADD_FAILURE() << "expected an error";
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
            EXPECT_NE(e.message().find("NaN or Inf in the update of variable "
                                       "'dnn/hiddenlayer_0/kernel'"),
                      std::string::npos)
                << e.message();
            EXPECT_NE(e.message().find("from its gradient: 1 of 70000"), std::string::npos)
                << e.message();
            EXPECT_NE(e.message().find(StrCat("flat index ", kBig - 3)), std::string::npos)
                << e.message();
          }
        }
      }
    }
  }
}

// A finite gradient whose update overflows (a huge learning rate) is caught too, and the
// message says the gradient was finite; a finite update passes.
TEST(SparseApplyTest, OverflowingUpdateIsCaughtAndFiniteOnesPass) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector<float>({1.0f, 2.0f}));
  auto g = Const(s, Tensor::FromVector<float>({1e30f, 1.0f}));
  Operation fine = ApplyGradientDescent(s, w, 1.0, Const(s, Tensor::FromVector<float>({1, 1})));
  Operation overflow = ApplyGradientDescent(s, w, 1e30, g);
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  session.RunTarget(fine);
  EXPECT_EQ(session.ReadVariable("w").data<float>()[1], 1.0f);
  try {
    session.RunTarget(overflow);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("variable 'w'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("the gradient was finite"), std::string::npos) << e.message();
  }
}

TEST(SparseApplyTest, OutOfRangeIndexNamesTheVariable) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("embeddings"), Tensor::FromVector(Table(), {kRows, kCols}));
  Operation train = SparseApplyGradientDescent(
      s, w, 0.1, Const(s, Tensor::FromVector<double>({1, 2, 3}, {1, kCols})),
      Const(s, Tensor::FromVector<int32_t>({7})));
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  try {
    session.RunTarget(train);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("'embeddings'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("7"), std::string::npos) << e.message();
  }
  // Nothing was written.
  EXPECT_TRUE(
      session.ReadVariable("embeddings").Equals(Tensor::FromVector(Table(), {kRows, kCols})));
}

TEST(SparseApplyTest, MismatchedRowShapeFailsAtConstruction) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("embeddings"), Tensor::FromVector(Table(), {kRows, kCols}));
  EXPECT_THROW(
      SparseApplyGradientDescent(s, w, 0.1, Const(s, Tensor::FromVector<double>({1, 2}, {1, 2})),
                                 Const(s, Tensor::FromVector<int64_t>({0}))),
      Error);
}

// Large tables go through the thread pool in several chunks, dense and sparse, float32.
TEST(SparseApplyTest, LargeTablesAreUpdatedEverywhereWithThreads) {
  constexpr int64_t kBigRows = 100003;
  Graph graph;
  Scope s(graph);
  std::vector<float> init(kBigRows * 2);
  for (size_t i = 0; i < init.size(); ++i) init[i] = static_cast<float>(i % 17) * 0.25f;
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector(init, {kBigRows, 2}));
  auto m = Variable(s.WithOpName("m"), Tensor::FromVector(init, {kBigRows, 2}));
  std::vector<float> ones(init.size(), 1.0f);
  Operation dense =
      ApplyGradientDescent(s, w, 0.5, Const(s, Tensor::FromVector(ones, {kBigRows, 2})));
  // Every even row once, row 0 twice more.
  std::vector<int64_t> indices;
  for (int64_t r = 0; r < kBigRows; r += 2) indices.push_back(r);
  indices.push_back(0);
  indices.push_back(0);
  std::vector<float> values(indices.size() * 2, 2.0f);
  Operation sparse = SparseApplyGradientDescent(
      s, m, 0.5, Const(s, Tensor::FromVector(values, {static_cast<int64_t>(indices.size()), 2})),
      Const(s, Tensor::FromVector(indices)));
  Session session(graph, {.intra_op_threads = 2});
  session.RunTarget(GlobalVariablesInitializer(s));
  session.Run({}, {}, {dense, sparse});
  Tensor w_after = session.ReadVariable("w");
  Tensor m_after = session.ReadVariable("m");
  for (int64_t i = 0; i < kBigRows * 2; ++i) {
    ASSERT_EQ(w_after.data<float>()[i], init[i] - 0.5f) << i;
    const int64_t row = i / 2;
    const float expected = row == 0 ? init[i] - 3.0f : row % 2 == 0 ? init[i] - 1.0f : init[i];
    ASSERT_EQ(m_after.data<float>()[i], expected) << i;
  }
}

TEST(SparseApplyTest, UpdatesCopyOnWriteSoFetchedValuesNeverChange) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector<double>({1.0, 2.0}));
  Operation step =
      ApplyGradientDescent(s, w, 1.0, Const(s, Tensor::FromVector<double>({1.0, 1.0})));
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  Tensor before = session.Eval(w);
  session.RunTarget(step);
  EXPECT_EQ(before.data<double>()[0], 1.0);
  EXPECT_EQ(session.Eval(w).data<double>()[0], 0.0);
}

}  // namespace
}  // namespace loom::train

// End to end with the real ops: Gather over an embedding table gives a sparse gradient,
// which Minimize applies to the gathered rows only.
namespace loom::train {
namespace {

TEST(SparseApplyTest, MinimizeThroughGatherUpdatesOnlyGatheredRows) {
  Graph graph;
  Scope s(graph);
  auto table = Variable(s.WithOpName("embeddings"), Tensor::FromVector(Table(), {kRows, kCols}));
  auto rows = Gather(s, table, Tensor::FromVector<int64_t>({4, 0, 4}));
  auto loss = Sum(s, Square(s, rows));
  Adagrad opt({.learning_rate = 0.1});
  std::vector<GradAndVar> grads = opt.ComputeGradients(s, loss);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_TRUE(grads[0].first.is_sparse());
  Operation train = opt.ApplyGradients(s, grads, GlobalStep(s));
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  session.RunTarget(train);
  Tensor after = session.ReadVariable("embeddings");
  const std::vector<double> init = Table();
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t j = 0; j < kCols; ++j) {
      const int64_t k = r * kCols + j;
      const double w = init[k];
      // d/dw of sum(w^2) over the gathered copies: row 4 twice, row 0 once.
      const double g = r == 4 ? 4 * w : r == 0 ? 2 * w : 0.0;
      const double expected = g == 0 ? w : w - 0.1 * g / std::sqrt(0.1 + g * g);
      EXPECT_NEAR(after.data<double>()[k], expected, 1e-12) << "row " << r;
    }
  }
}

}  // namespace
}  // namespace loom::train
