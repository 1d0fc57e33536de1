#include "loom/ops/dropout.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "loom/ops/philox.h"
#include "loom/ops/random_internal.h"
#include "loom/ops/vector_isa.h"

namespace loom {
namespace {

using random_internal::kSeed;
using random_internal::kSeed2;
using random_internal::NextStream;
using random_internal::OpSeeds;
using random_internal::Stream;
inline constexpr Attr<double> kRate{"rate"};

const OpDef& DropoutGradOp();

// Keeps element j of blocks [b, e) (4 per block, n in all) when its uniform is >= rate:
// m = keep or 0 and out = in * m. With kAvx2, 32 blocks at a time through
// Philox4x32x8Avx2 (four groups of 8 lanes; the same bits as Stream::At), the tail one
// block at a time.
// (Without AVX2 the scalar 8-lane form measured slower than one block at a time, so the
// baseline copy keeps that.)
template <typename T, bool kAvx2>
void DropoutBlocks(const Stream& stream, int64_t b, int64_t e, int64_t n, float rate, T keep,
                   const T* in, T* out, T* m) {
  int64_t blk = b;
#if defined(__x86_64__)
  if constexpr (kAvx2) {
    constexpr int kGroups = 4, kBlocks = 8 * kGroups, kPerGroup = 4 * kBlocks;
    const uint32_t run_lo = static_cast<uint32_t>(stream.run);
    const uint32_t run_hi = static_cast<uint32_t>(stream.run >> 32);
    for (; blk + kBlocks <= e && (blk + kBlocks) * 4 <= n; blk += kBlocks) {
      alignas(32) uint32_t x[kGroups][4][8];
      for (int g = 0; g < kGroups; ++g) {
        for (int l = 0; l < 8; ++l) {
          const uint64_t counter = static_cast<uint64_t>(blk) + 8 * g + l;
          x[g][0][l] = static_cast<uint32_t>(counter);
          x[g][1][l] = static_cast<uint32_t>(counter >> 32);
          x[g][2][l] = run_lo;
          x[g][3][l] = run_hi;
        }
      }
      alignas(32) uint32_t bits[kPerGroup];  // in element order
      philox::Philox4x32x8Avx2<kGroups>(x, stream.key, bits);
      const int64_t first = blk * 4;
      for (int j = 0; j < kPerGroup; ++j) {
        const T mk = philox::ToFloat(bits[j]) >= rate ? keep : T(0);
        m[first + j] = mk;
        out[first + j] = in[first + j] * mk;
      }
    }
  }
#endif
  for (; blk < e; ++blk) {
    const philox::Block bits = stream.At(blk);
    const int64_t first = blk * 4;
    const int64_t count = std::min<int64_t>(4, n - first);
    for (int64_t k = 0; k < count; ++k) {
      const T mk = philox::ToFloat(bits[k]) >= rate ? keep : T(0);
      m[first + k] = mk;
      out[first + k] = in[first + k] * mk;
    }
  }
}

// y = x * mask into output 0 and mask (0 or 1 / (1 - rate), x's dtype) into output 1.
void DropoutKernel(KernelContext& c, double rate_value) {
  const Tensor& x = c.input(0);
  const float rate = static_cast<float>(rate_value);
  const double scale = 1.0 / (1.0 - rate_value);
  Tensor y = c.AllocateOutput(0, x.shape());
  Tensor mask = c.AllocateOutput(1, x.shape());
  const Stream stream = NextStream(c);
  SwitchFloat(x.dtype(), "Dropout", [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    T* m = mask.data<T>();
    const T keep_value = static_cast<T>(scale);
    const int64_t n = x.NumElements();
    // Chunks split on block boundaries (as FillBlocks), so masks do not depend on the
    // thread count.
    c.pool().ParallelFor((n + 3) / 4, 2048, [&](int64_t b, int64_t e) {
      if (internal::ActiveVectorIsa() == internal::VectorIsa::kAvx2) {
        internal::RunOn(internal::VectorIsa::kAvx2, [&] {
          DropoutBlocks<T, true>(stream, b, e, n, rate, keep_value, in, out, m);
        });
      } else {
        DropoutBlocks<T, false>(stream, b, e, n, rate, keep_value, in, out, m);
      }
    });
    return 0;
  });
}

// y = x * mask with mask independent of x: dx = dy * mask.
std::vector<GradOutput> DropoutGradient(const GradContext& g, int num_inputs) {
  std::vector<GradOutput> grads(num_inputs);
  if (g.grad(0).valid()) {
    grads[0] =
        g.scope().AddNode(DropoutGradOp(), {g.grad(0), g.output(1)}, {}, "DropoutGrad")->output(0);
  }
  return grads;
}

// Outputs y = x * mask and mask (0 or 1 / (1 - rate), x's dtype).
const OpDef& DropoutOp() {
  static const OpDef op = {
      .name = "Dropout",
      .num_inputs = 1,
      .stateful = true,
      .attrs = {kRate.Required(), kSeed.Default(0), kSeed2.Default(0)},
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            const double rate = c.attr(kRate);
            if (!(rate >= 0 && rate < 1)) c.Fail("rate must be in [0, 1), got ", rate);
            c.set_output(0, c.input_dtype(0), c.input_shape(0));
            c.set_output(1, c.input_dtype(0), c.input_shape(0));
          },
      .kernel = [](KernelContext& c) { DropoutKernel(c, c.attr(kRate)); },
      .grad = [](const GradContext& g) { return DropoutGradient(g, 1); },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kRate(0.5), kSeed(1)}, false};
          },
  };
  return op;
}

// Dropout with its rate a run-time input (a float scalar in [0, 1), checked when it runs):
// TF1's tf.nn.dropout(x, keep_prob) with keep_prob a placeholder, fed 0.5 to train and 1
// to evaluate. The same outputs, stream and gradient as Dropout.
const OpDef& DropoutWithRateOp() {
  static const OpDef op = {
      .name = "DropoutWithRate",
      .num_inputs = 2,
      .stateful = true,
      .attrs = {kSeed.Default(0), kSeed2.Default(0)},
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectDType(1, {kFloat32, kFloat64});
            c.ExpectRank(1, 0);
            c.set_output(0, c.input_dtype(0), c.input_shape(0));
            c.set_output(1, c.input_dtype(0), c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& r = c.input(1);
            const double rate = r.dtype() == kFloat32 ? r.data<float>()[0] : r.data<double>()[0];
            if (!(rate >= 0 && rate < 1)) {
              c.Fail("rate must be in [0, 1), got ", rate,
                     " (keep_prob = 1 - rate must be in (0, 1])");
            }
            DropoutKernel(c, rate);
          },
      .grad = [](const GradContext& g) { return DropoutGradient(g, 2); },
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({2, 3}), Tensor::Scalar<double>(0.5)}, {kSeed(1)}, false};
          },
  };
  return op;
}

// dy * mask, element-wise.
const OpDef& DropoutGradOp() {
  static const OpDef op = {
      .name = "DropoutGrad",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectSameDType(0, 1);
            c.set_output(0, c.input_dtype(0), c.input_shape(0).MergeWith(c.input_shape(1)));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& dy = c.input(0);
            const Tensor& mask = c.input(1);
            if (dy.shape() != mask.shape())
              c.Fail("gradient ", dy.shape(), " vs mask ", mask.shape());
            Tensor dx = c.ForwardInputOrAllocate(0, 0, dy.shape());
            SwitchFloat(dy.dtype(), "DropoutGrad", [&](auto tag) {
              using T = decltype(tag);
              const T* g = c.input(0).data<T>();
              const T* m = mask.data<T>();
              T* out = dx.data<T>();
              c.pool().ParallelFor(dx.NumElements(), 16384, [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) out[i] = g[i] * m[i];
              });
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {g.scope()
                    .AddNode(DropoutGradOp(), {g.grad(0), g.input(1)}, {}, "DropoutGrad")
                    ->output(0),
                GradOutput()};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), SampleDoubles({2, 3}, 2)}, {}, false};
          },
  };
  return op;
}

}  // namespace

namespace random_internal {
bool IsDropoutOp(const Node& node) {
  return &node.op_def() == &DropoutOp() || &node.op_def() == &DropoutWithRateOp();
}
}  // namespace random_internal

Output Dropout(const Scope& scope, Input x, double rate, int64_t seed) {
  Output xo = AsOutput(scope, x);
  if (rate == 0) return xo;
  auto [s1, s2] = OpSeeds(scope, seed);
  return scope.AddNode(DropoutOp(), {xo}, {kRate(rate), kSeed(s1), kSeed2(s2)}, "Dropout")
      ->output(0);
}

void RegisterDropoutOps(OpRegistry& registry) {
  for (const OpDef* op : {&DropoutOp(), &DropoutWithRateOp(), &DropoutGradOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
