// The metric family's dedicated ops: counting over thresholds (AUC), in_top_k and the
// confusion-matrix accumulation. None is differentiable (counts of comparisons).
#include <algorithm>
#include <cmath>

#include "loom/estimator/metrics_internal.h"

namespace loom::metrics {
namespace internal {
namespace {

inline constexpr Attr<std::vector<double>> kThresholds{"thresholds"};
inline constexpr Attr<int64_t> kK{"k"};
inline constexpr Attr<int64_t> kNumClasses{"num_classes"};

// Element count of weights input i: 1 (broadcast) or the same as predictions'.
void CheckWeightsCount(const KernelContext& c, int weights_input, int64_t n) {
  const int64_t w = c.input(weights_input).NumElements();
  if (w != 1 && w != n) {
    c.Fail("weights have ", w, " elements but there are ", n, " entries; pass a scalar or ",
           "one weight per entry");
  }
}

// Inputs: labels (bool or numeric), predictions (float), weights (float64). Attr
// "thresholds": ascending. Output float64 [4, T]: tp, fn, tn, fp.
const OpDef& ThresholdConfusionCountsOp() {
  static const OpDef op = {
      .name = "ThresholdConfusionCounts",
      .num_inputs = 3,
      .attrs = {kThresholds.Required()},
      .output_dtypes = {DTypeRule::Fixed(kFloat64)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(1, {kFloat32, kFloat64});
            c.ExpectDType(2, {kFloat64});
            const auto& t = c.attr(kThresholds);
            c.set_output(0, kFloat64, Shape{4, static_cast<int64_t>(t.size())});
          },
      .kernel =
          [](KernelContext& c) {
            const auto& thresholds = c.attr(kThresholds);
            const int64_t num_t = static_cast<int64_t>(thresholds.size());
            // TF compares in float32: float(prediction) > float(threshold).
            std::vector<float> thr(thresholds.begin(), thresholds.end());
            const Tensor& labels = c.input(0);
            const Tensor& preds = c.input(1);
            const int64_t n = preds.NumElements();
            if (labels.NumElements() != n) {
              c.Fail("labels have ", labels.NumElements(), " elements, predictions ", n);
            }
            CheckWeightsCount(c, 2, n);
            const double* w = c.input(2).data<double>();
            const bool scalar_w = c.input(2).NumElements() == 1;
            // pos_hist[k]: weight of positives above exactly the first k thresholds.
            std::vector<double> pos_hist(num_t + 1, 0.0), neg_hist(num_t + 1, 0.0);
            SwitchAll(labels.dtype(), "ThresholdConfusionCounts labels", [&](auto ltag) {
              using L = decltype(ltag);
              if constexpr (std::is_same_v<L, std::string>) {
                c.Fail("labels must be bool or numeric");
              } else {
                const L* l = labels.data<L>();
                SwitchFloat(preds.dtype(), "ThresholdConfusionCounts", [&](auto ptag) {
                  using P = decltype(ptag);
                  const P* p = preds.data<P>();
                  for (int64_t i = 0; i < n; ++i) {
                    if (!(p[i] >= 0 && p[i] <= 1)) {
                      c.Fail("predictions must be in [0, 1]; entry ", i, " is ", p[i]);
                    }
                    const float pf = static_cast<float>(p[i]);
                    // Thresholds strictly below pf: those it counts as positive at.
                    const int64_t k = std::lower_bound(thr.begin(), thr.end(), pf) - thr.begin();
                    const double wi = scalar_w ? w[0] : w[i];
                    (l[i] != L(0) ? pos_hist : neg_hist)[k] += wi;
                  }
                  return 0;
                });
              }
              return 0;
            });
            Tensor out = c.AllocateOutput(0, Shape{4, num_t});
            double* o = out.data<double>();
            double pos_total = 0, neg_total = 0;
            for (int64_t k = 0; k <= num_t; ++k) {
              pos_total += pos_hist[k];
              neg_total += neg_hist[k];
            }
            // Sweep thresholds from the top: tp[t] = weight of positives with k > t.
            double tp = 0, fp = 0;
            for (int64_t t = num_t - 1; t >= 0; --t) {
              tp += pos_hist[t + 1];
              fp += neg_hist[t + 1];
              o[0 * num_t + t] = tp;
              o[1 * num_t + t] = pos_total - tp;
              o[2 * num_t + t] = neg_total - fp;
              o[3 * num_t + t] = fp;
            }
            c.set_output(0, out);
          },
      .no_gradient = "counts of threshold comparisons",
      .sample =
          [] {
            return OpSample{
                {Tensor::FromVector<bool>({true, false}), SampleDoubles({2}), SampleDoubles({2})},
                {kThresholds(std::vector<double>{0.5, 1.0})},
                false};
          },
  };
  return op;
}

// Inputs: predictions [B, C] float, targets [B] int32/int64. Attr k. Output bool [B].
const OpDef& InTopKOp() {
  static const OpDef op = {
      .name = "InTopK",
      .num_inputs = 2,
      .attrs = {kK.Required()},
      .output_dtypes = {DTypeRule::Fixed(kBool)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectDType(1, {kInt32, kInt64});
            c.ExpectRank(0, 2);
            c.ExpectRank(1, 1);
            Shape out{kUnknownDim};
            if (c.input_shape(0).rank_known()) out.set_dim(0, c.input_shape(0).dim(0));
            if (out.dim(0) == kUnknownDim && c.input_shape(1).rank_known()) {
              out.set_dim(0, c.input_shape(1).dim(0));
            }
            c.set_output(0, kBool, out);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& preds = c.input(0);
            const Tensor& targets = c.input(1);
            const int64_t batch = preds.dim(0), classes = preds.dim(1);
            const int64_t k = c.attr(kK);
            if (targets.NumElements() != batch) {
              c.Fail("targets have ", targets.NumElements(), " entries for a batch of ", batch);
            }
            Tensor out = c.AllocateOutput(0, Shape{batch});
            bool* o = out.data<bool>();
            SwitchFloat(preds.dtype(), "InTopK", [&](auto tag) {
              using T = decltype(tag);
              const T* p = preds.data<T>();
              for (int64_t b = 0; b < batch; ++b) {
                const int64_t target = targets.dtype() == kInt32 ? targets.data<int32_t>()[b]
                                                                 : targets.data<int64_t>()[b];
                const T* row = p + b * classes;
                bool cannot_say = target < 0 || target >= classes || !std::isfinite(row[target]);
                int64_t more_probable = 0;
                for (int64_t j = 0; !cannot_say && j < classes; ++j) {
                  if (!std::isfinite(row[j]))
                    cannot_say = true;
                  else if (row[j] > row[target])
                    ++more_probable;
                }
                o[b] = !cannot_say && more_probable < k;
              }
              return 0;
            });
            c.set_output(0, out);
          },
      .no_gradient = "boolean output",
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({2, 3}), Tensor::FromVector<int64_t>({0, 2})}, {kK(2)}, false};
          },
  };
  return op;
}

int64_t IdAt(const Tensor& t, int64_t i) {
  return t.dtype() == kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
}

// Inputs: labels [N], predictions [N] (int32/int64), weights float64 (scalar or [N]).
// Attr num_classes. Output float64 [C, C].
const OpDef& ConfusionMatrixCountsOp() {
  static const OpDef op = {
      .name = "ConfusionMatrixCounts",
      .num_inputs = 3,
      .attrs = {kNumClasses.Required()},
      .output_dtypes = {DTypeRule::Fixed(kFloat64)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt32, kInt64});
            c.ExpectDType(1, {kInt32, kInt64});
            c.ExpectDType(2, {kFloat64});
            const int64_t nc = c.attr(kNumClasses);
            c.set_output(0, kFloat64, Shape{nc, nc});
          },
      .kernel =
          [](KernelContext& c) {
            const int64_t nc = c.attr(kNumClasses);
            const Tensor& labels = c.input(0);
            const Tensor& preds = c.input(1);
            const int64_t n = labels.NumElements();
            if (preds.NumElements() != n) {
              c.Fail("labels have ", n, " entries, predictions ", preds.NumElements());
            }
            CheckWeightsCount(c, 2, n);
            const double* w = c.input(2).data<double>();
            const bool scalar_w = c.input(2).NumElements() == 1;
            Tensor out = c.AllocateOutput(0, Shape{nc, nc});
            double* o = out.data<double>();
            std::fill(o, o + nc * nc, 0.0);
            for (int64_t i = 0; i < n; ++i) {
              const int64_t l = IdAt(labels, i), p = IdAt(preds, i);
              if (l < 0 || l >= nc)
                c.Fail("label ", l, " at entry ", i, " is outside [0, ", nc, ")");
              if (p < 0 || p >= nc) {
                c.Fail("prediction ", p, " at entry ", i, " is outside [0, ", nc, ")");
              }
              o[l * nc + p] += scalar_w ? w[0] : w[i];
            }
            c.set_output(0, out);
          },
      .no_gradient = "counts of class ids",
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<int64_t>({0, 1}),
                             Tensor::FromVector<int64_t>({1, 1}), SampleDoubles({2})},
                            {kNumClasses(2)},
                            false};
          },
  };
  return op;
}

}  // namespace

Output ThresholdConfusionCounts(const Scope& s, Output labels, Output predictions, Output weights,
                                const std::vector<double>& thresholds) {
  if (!std::is_sorted(thresholds.begin(), thresholds.end())) {
    throw InvalidArgument("metric '", s.prefix(), "': thresholds must be ascending");
  }
  return s
      .AddNode(ThresholdConfusionCountsOp(), {labels, predictions, weights},
               {kThresholds(thresholds)}, "ThresholdConfusionCounts")
      ->output(0);
}

Output ConfusionMatrixCounts(const Scope& s, Output labels, Output predictions, Output weights,
                             int64_t num_classes) {
  return s
      .AddNode(ConfusionMatrixCountsOp(), {labels, predictions, weights},
               {kNumClasses(num_classes)}, "ConfusionMatrixCounts")
      ->output(0);
}

}  // namespace internal

Output InTopK(const Scope& scope, Input predictions, Input targets, int64_t k) {
  Output p = AsOutput(scope, predictions);
  Output t = AsOutput(scope, targets, kInt64);
  if (k < 1)
    throw InvalidArgument("InTopK '", scope.FullName("InTopK"), "': k must be >= 1, got ", k);
  return scope.AddNode(internal::InTopKOp(), {p, t}, {internal::kK(k)}, "InTopK")->output(0);
}

void RegisterMetricOps(OpRegistry& registry) {
  registry.Register(internal::ThresholdConfusionCountsOp());
  registry.Register(internal::InTopKOp());
  registry.Register(internal::ConfusionMatrixCountsOp());
}

}  // namespace loom::metrics
