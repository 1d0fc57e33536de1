#include "loom/runtime/gradient_checker.h"

#include <cmath>
#include <random>

#include "loom/autodiff/gradients.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom {

Tensor RandomDoubles(const Shape& shape, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(kFloat64, shape);
  for (double& v : t.flat<double>()) v = dist(rng);
  return t;
}

double MaxGradientError(const GradientCheckFn& fn, const std::vector<Tensor>& x_values,
                        GradientCheckOptions options) {
  Graph graph;
  Scope scope(graph);
  std::vector<Output> xs;
  for (size_t i = 0; i < x_values.size(); ++i) {
    LOOM_CHECK(x_values[i].dtype() == kFloat64) << "gradient checks run in float64";
    xs.push_back(
        Placeholder(scope.WithOpName("x" + std::to_string(i)), kFloat64, x_values[i].shape()));
  }
  Output y = fn(scope, xs);
  LOOM_CHECK(y.dtype() == kFloat64) << "the checked function must return float64";
  Session session(graph, {.intra_op_threads = 1});

  FeedList feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.push_back({xs[i], x_values[i].Clone()});
  Tensor y0 = session.Run(feeds, {y})[0];
  Tensor r = RandomDoubles(y0.shape(), options.seed);
  Output r_const = Const(scope, r);
  std::vector<Output> grads = Gradients(scope, {y}, xs, {r_const});

  // An input no gradient reaches (StopGradient, ZerosLike, the shape operand of
  // ReshapeLike) has a symbolic gradient of zero, which the numeric one must match.
  std::vector<Output> fetches;
  for (const Output& g : grads)
    if (g.valid()) fetches.push_back(g);
  std::vector<Tensor> fetched = session.Run(feeds, fetches);
  std::vector<Tensor> symbolic;
  for (size_t i = 0, f = 0; i < grads.size(); ++i) {
    symbolic.push_back(grads[i].valid() ? fetched[f++]
                                        : Tensor::Zeros(kFloat64, x_values[i].shape()));
  }

  auto loss = [&](const FeedList& f) {
    Tensor out = session.Run(f, {y})[0];
    double total = 0;
    auto yv = out.flat<double>();
    auto rv = r.flat<double>();
    for (size_t k = 0; k < yv.size(); ++k) total += yv[k] * rv[k];
    return total;
  };
  double max_error = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (symbolic[i].shape() != x_values[i].shape()) {
      throw Internal("gradient of x", i, " has shape ", symbolic[i].shape(), ", expected ",
                     x_values[i].shape());
    }
    auto sym = symbolic[i].flat<double>();
    for (int64_t k = 0; k < x_values[i].NumElements(); ++k) {
      double* v = feeds[i].second.data<double>() + k;
      const double saved = *v;
      *v = saved + options.delta;
      double plus = loss(feeds);
      *v = saved - options.delta;
      double minus = loss(feeds);
      *v = saved;
      double numeric = (plus - minus) / (2 * options.delta);
      double error = std::abs(sym[k] - numeric) / std::max(1.0, std::abs(numeric));
      max_error = std::max(max_error, error);
    }
  }
  return max_error;
}

}  // namespace loom
