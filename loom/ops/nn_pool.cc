// MaxPool and AvgPool with their gradients. NHWC; the window geometry is nn_window.h's.
#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include "loom/ops/nn.h"
#include "loom/ops/nn_internal.h"
#include "loom/ops/nn_window.h"

namespace loom {
namespace {

using namespace nn_internal;  // NOLINT: the nn files' own helpers

// The in-image part [lo, hi) of the window at output index o along one dimension.
inline void WindowRange(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t in, int64_t* lo,
                        int64_t* hi) {
  const int64_t start = o * stride - pad;
  *lo = std::max<int64_t>(start, 0);
  *hi = std::min<int64_t>(start + k, in);
}

template <typename Ctx>
Geometry PoolGeometry(const Ctx& c, const Shape& input) {
  auto [k_h, k_w] = SpatialAttr(c, kKsize);
  return MakeGeometry(c, input, k_h, k_w);
}

void PoolShape(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  c.ExpectRank(0, 4);
  const Shape& in = c.input_shape(0);
  if (!in.rank_known()) {
    SpatialAttr(c, kKsize);
    SpatialAttr(c, kStrides);
    IsSame(c);
    c.set_output(0, c.input_dtype(0), Shape{kUnknownDim, kUnknownDim, kUnknownDim, kUnknownDim});
    return;
  }
  Geometry g = PoolGeometry(c, in);
  c.set_output(0, c.input_dtype(0), Shape{g.batch, g.out_h, g.out_w, g.channels});
}

Geometry PoolKernelGeometry(const KernelContext& c, const Tensor& input, const Tensor* dy) {
  if (input.rank() != 4) c.Fail("input must be NHWC (rank 4), got ", input.shape());
  Geometry g = PoolGeometry(c, input.shape());
  if (dy != nullptr && dy->shape() != Shape{g.batch, g.out_h, g.out_w, g.channels}) {
    c.Fail("gradient has shape ", dy->shape(), ", expected ",
           Shape{g.batch, g.out_h, g.out_w, g.channels});
  }
  return g;
}

// Calls fn(n, oh, ow, h_lo, h_hi, w_lo, w_hi) for every output pixel of images [n0, n1).
template <typename Fn>
void ForEachWindow(const Geometry& g, int64_t n0, int64_t n1, const Fn& fn) {
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      int64_t h_lo, h_hi;
      WindowRange(oh, g.stride_h, g.pad_top, g.k_h, g.in_h, &h_lo, &h_hi);
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        int64_t w_lo, w_hi;
        WindowRange(ow, g.stride_w, g.pad_left, g.k_w, g.in_w, &w_lo, &w_hi);
        fn(n, oh, ow, h_lo, h_hi, w_lo, w_hi);
      }
    }
  }
}

// Images per ParallelFor chunk so that a chunk does ~kElementwiseChunk element visits.
int64_t ImagesPerChunk(const Geometry& g) {
  const int64_t work = std::max<int64_t>(1, g.out_h * g.out_w * g.channels * g.k_h * g.k_w);
  return std::max<int64_t>(1, nn_internal::kElementwiseChunk / work);
}

// Nonzero while a ScopedGeneralMaxPool is alive.
std::atomic<int> g_general_max_pool{0};

// 2x2 windows at stride 2 that lie inside the image (the usual pooling).
bool IsInner2x2(const Geometry& g) {
  return g.k_h == 2 && g.k_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_top == 0 &&
         g.pad_left == 0 && 2 * g.out_h <= g.in_h && 2 * g.out_w <= g.in_w;
}

// MaxPool over IsInner2x2 windows, images [n0, n1): the general loop's arithmetic (the
// same bits, NaN included) without its per-window setup, one output row at a time.
template <typename T>
void MaxPool2x2(const Geometry& g, const T* x, T* y, int64_t n0, int64_t n1) {
  const int64_t ch = g.channels, row = g.in_w * ch;
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const T* top = x + (n * g.in_h + 2 * oh) * row;
      T* o_row = y + (n * g.out_h + oh) * g.out_w * ch;
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const T* __restrict a = top + 2 * ow * ch;
        const T* __restrict c = a + row;
        T* __restrict o = o_row + ow * ch;
        for (int64_t j = 0; j < ch; ++j) {
          // As the general loop: o = lowest, then o = v > o || v != v ? v : o per element.
          T m = std::numeric_limits<T>::lowest();
          for (const T v : {a[j], a[ch + j], c[j], c[ch + j]}) m = v > m || v != v ? v : m;
          o[j] = m;
        }
      }
    }
  }
}

template <bool kMax>
void PoolKernel(KernelContext& c) {
  const Tensor& input = c.input(0);
  Geometry g = PoolKernelGeometry(c, input, nullptr);
  Tensor out = c.AllocateOutput(0, Shape{g.batch, g.out_h, g.out_w, g.channels});
  SwitchFloat(input.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data<T>();
    T* y = out.data<T>();
    const int64_t ch = g.channels;
    if (kMax && IsInner2x2(g) && g_general_max_pool.load(std::memory_order_relaxed) == 0) {
      c.pool().ParallelFor(g.batch, ImagesPerChunk(g), [&](int64_t n0, int64_t n1) {
        internal::Vectorized([&] { MaxPool2x2(g, x, y, n0, n1); });
      });
      return 0;
    }
    c.pool().ParallelFor(g.batch, ImagesPerChunk(g), [&](int64_t n0, int64_t n1) {
      internal::Vectorized([&] {
        ForEachWindow(g, n0, n1,
                      [&](int64_t n, int64_t oh, int64_t ow, int64_t h_lo, int64_t h_hi,
                          int64_t w_lo, int64_t w_hi) {
                        T* o = y + ((n * g.out_h + oh) * g.out_w + ow) * ch;
                        std::fill(o, o + ch, kMax ? std::numeric_limits<T>::lowest() : T(0));
                        for (int64_t ih = h_lo; ih < h_hi; ++ih) {
                          for (int64_t iw = w_lo; iw < w_hi; ++iw) {
                            const T* v = x + ((n * g.in_h + ih) * g.in_w + iw) * ch;
                            if constexpr (kMax) {
                              // NaN propagates (numpy's maximum): once o[j] is NaN nothing replaces
                              // it.
                              for (int64_t j = 0; j < ch; ++j)
                                o[j] = v[j] > o[j] || v[j] != v[j] ? v[j] : o[j];
                            } else {
                              for (int64_t j = 0; j < ch; ++j) o[j] += v[j];
                            }
                          }
                        }
                        if constexpr (!kMax) {
                          const int64_t count = (h_hi - h_lo) * (w_hi - w_lo);
                          const T scale = count > 0 ? T(1) / static_cast<T>(count) : T(0);
                          for (int64_t j = 0; j < ch; ++j) o[j] *= scale;
                        }
                      });
      });
    });
    return 0;
  });
}

// True when every input element lies in some window.
bool CoversInput(const Geometry& g) {
  return g.out_h * g.k_h - g.pad_top >= g.in_h && g.out_w * g.k_w - g.pad_left >= g.in_w;
}

// True when the windows tile the input (stride = window, the usual 2x2/2 pooling): each
// input element lies in at most one window, so MaxPoolGrad can write every element once
// instead of zeroing the input gradient and scatter-adding into it.
bool WindowsTile(const Geometry& g) { return g.stride_h == g.k_h && g.stride_w == g.k_w; }

// MaxPoolGrad over tiling windows, images [n0, n1): per window, pass 1 finds the value the
// forward pass returned (the first NaN, else the maximum: the rule of the general kernel
// below); pass 2 writes the gradient to the first element equal to it (a NaN equals a NaN
// here) and zero to the others, so each channel's gradient goes where the general
// kernel's scan puts it. Branch-free over channels, so both loops vectorize.
// A fused chain (nn_fused.h) passes kRelu: each written gradient d becomes
// ReluGrad(d, features) there, and with kBias it is also added into bias_acc[n * channels + j]
// (image n's partial bias gradient). REQUIRES for kRelu: CoversInput(g).
template <typename T, bool kRelu = false, bool kBias = false>
void MaxPoolGradTiled(const Geometry& g, const T* x, const T* dout, T* din, int64_t n0, int64_t n1,
                      T* __restrict bst, T* __restrict todo, const T* features = nullptr,
                      T* bias_acc = nullptr) {
  const int64_t nc = g.channels, image_size = g.in_h * g.in_w * nc;
  // Elements no window covers (a VALID window leaving trailing rows or columns) stay zero.
  if (!CoversInput(g)) std::fill(din + n0 * image_size, din + n1 * image_size, T(0));
  ForEachWindow(g, n0, n1,
                [&](int64_t n, int64_t oh, int64_t ow, int64_t h_lo, int64_t h_hi, int64_t w_lo,
                    int64_t w_hi) {
                  if (h_lo >= h_hi || w_lo >= w_hi) return;
                  const T* __restrict d = dout + ((n * g.out_h + oh) * g.out_w + ow) * nc;
                  const T* __restrict first = x + ((n * g.in_h + h_lo) * g.in_w + w_lo) * nc;
                  for (int64_t j = 0; j < nc; ++j) bst[j] = first[j];
                  for (int64_t ih = h_lo; ih < h_hi; ++ih) {
                    for (int64_t iw = w_lo; iw < w_hi; ++iw) {
                      const T* __restrict v = x + ((n * g.in_h + ih) * g.in_w + iw) * nc;
                      for (int64_t j = 0; j < nc; ++j) {
                        const bool take = !(v[j] <= bst[j]) && bst[j] == bst[j];
                        bst[j] = take ? v[j] : bst[j];
                      }
                    }
                  }
                  for (int64_t j = 0; j < nc; ++j) todo[j] = T(1);
                  for (int64_t ih = h_lo; ih < h_hi; ++ih) {
                    for (int64_t iw = w_lo; iw < w_hi; ++iw) {
                      const int64_t offset = ((n * g.in_h + ih) * g.in_w + iw) * nc;
                      const T* __restrict v = x + offset;
                      T* __restrict o = din + offset;
                      for (int64_t j = 0; j < nc; ++j) {
                        // Branch-free (todo is 1 until the element is found, then 0), so with
                        // -fno-trapping-math (CMakeLists.txt) the loop vectorizes.
                        const T vj = v[j], bj = bst[j], dj = d[j], tj = todo[j];
                        const bool same = (vj == bj) | (__builtin_isunordered(vj, vj) &
                                                        __builtin_isunordered(bj, bj));
                        const T hit = same ? tj : T(0);
                        o[j] = hit != T(0) ? dj : T(0);
                        todo[j] = tj - hit;
                      }
                    }
                  }
                  if constexpr (kRelu) {
                    // The window's gradients, still in L1, through ReluGrad (and into the
                    // bias gradient): a loop of its own, which vectorizes (folded into the
                    // loop above it did not).
                    T* __restrict acc = kBias ? bias_acc + n * nc : nullptr;
                    for (int64_t ih = h_lo; ih < h_hi; ++ih) {
                      for (int64_t iw = w_lo; iw < w_hi; ++iw) {
                        const int64_t offset = ((n * g.in_h + ih) * g.in_w + iw) * nc;
                        T* __restrict o = din + offset;
                        const T* __restrict f = features + offset;
                        for (int64_t j = 0; j < nc; ++j) o[j] = ReluGradOf(o[j], f[j]);
                        if constexpr (kBias) {
                          for (int64_t j = 0; j < nc; ++j) acc[j] += o[j];
                        }
                      }
                    }
                  }
                });
}

// where[j] = the offset in x of the element of channel j of the window (image n, rows
// [h_lo, h_hi), columns [w_lo, w_hi), not empty) that MaxPool returned: start from the
// window's first element; later ones win only when strictly larger, or when they are the
// window's first NaN, so the gradient goes where the NaN came from. best[j] is its value.
// Branch-free, so the channel loop vectorizes (over restrict locals: through captured
// vectors the trip count could not be computed and the loop stayed scalar).
template <typename T>
inline void WindowArgmax(const Geometry& g, const T* x, int64_t n, int64_t h_lo, int64_t h_hi,
                         int64_t w_lo, int64_t w_hi, T* __restrict best,
                         int64_t* __restrict where) {
  const int64_t nc = g.channels;
  const int64_t first = ((n * g.in_h + h_lo) * g.in_w + w_lo) * nc;
  for (int64_t j = 0; j < nc; ++j) {
    best[j] = x[first + j];
    where[j] = first + j;
  }
  for (int64_t ih = h_lo; ih < h_hi; ++ih) {
    for (int64_t iw = w_lo; iw < w_hi; ++iw) {
      const int64_t offset = ((n * g.in_h + ih) * g.in_w + iw) * nc;
      const T* __restrict v = x + offset;
      for (int64_t j = 0; j < nc; ++j) {
        const bool take = !(v[j] <= best[j]) && best[j] == best[j];
        best[j] = take ? v[j] : best[j];
        where[j] = take ? offset + j : where[j];
      }
    }
  }
}

// MaxPoolGrad routes each output gradient to the first maximum of its window (row-major
// scan, as TF's CPU kernel); AvgPoolGrad spreads it evenly over the in-image elements.
// Returns its output, for MaxPoolGradRelu.
template <bool kMax>
Tensor PoolGradKernel(KernelContext& c) {
  const Tensor& input = c.input(0);  // AvgPoolGrad uses only its shape
  const Tensor& dy = c.input(1);
  Geometry g = PoolKernelGeometry(c, input, &dy);
  Tensor dx = c.AllocateOutput(0, input.shape());
  SwitchFloat(input.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data<T>();
    const T* dout = dy.data<T>();
    T* din = dx.data<T>();
    const int64_t ch = g.channels, image_size = g.in_h * g.in_w * ch;
    if (kMax && WindowsTile(g) && g_general_max_pool.load(std::memory_order_relaxed) == 0) {
      c.pool().ParallelFor(g.batch, ImagesPerChunk(g), [&](int64_t n0, int64_t n1) {
        std::vector<T> best(ch), todo(ch);
        internal::Vectorized(
            [&] { MaxPoolGradTiled(g, x, dout, din, n0, n1, best.data(), todo.data()); });
      });
      return 0;
    }
    c.pool().ParallelFor(g.batch, ImagesPerChunk(g), [&](int64_t n0, int64_t n1) {
      std::fill(din + n0 * image_size, din + n1 * image_size, T(0));
      std::vector<T> best(kMax ? ch : 0);
      std::vector<int64_t> where(kMax ? ch : 0);
      internal::Vectorized([&] {
        ForEachWindow(g, n0, n1,
                      [&](int64_t n, int64_t oh, int64_t ow, int64_t h_lo, int64_t h_hi,
                          int64_t w_lo, int64_t w_hi) {
                        const T* d = dout + ((n * g.out_h + oh) * g.out_w + ow) * ch;
                        if constexpr (kMax) {
                          if (h_lo >= h_hi || w_lo >= w_hi) return;
                          WindowArgmax(g, x, n, h_lo, h_hi, w_lo, w_hi, best.data(), where.data());
                          for (int64_t j = 0; j < ch; ++j) din[where[j]] += d[j];
                        } else {
                          const int64_t count = (h_hi - h_lo) * (w_hi - w_lo);
                          if (count == 0) return;
                          const T scale = T(1) / static_cast<T>(count);
                          for (int64_t ih = h_lo; ih < h_hi; ++ih) {
                            for (int64_t iw = w_lo; iw < w_hi; ++iw) {
                              T* o = din + ((n * g.in_h + ih) * g.in_w + iw) * ch;
                              for (int64_t j = 0; j < ch; ++j) o[j] += d[j] * scale;
                            }
                          }
                        }
                      });
      });
    });
    return 0;
  });
  return dx;
}

// MaxPoolGradGrad(x, g): out[n, oh, ow, j] = g at the element MaxPoolGrad routes the window's
// gradient to (WindowArgmax; TF's MaxPoolGradGrad): MaxPoolGrad's adjoint in its gradient
// input, so its gradient. An empty window gives 0.
void MaxPoolGradGradKernel(KernelContext& c) {
  nn_internal::ExpectSameRuntimeShape(c, 0, 1);
  const Tensor& input = c.input(0);
  const Tensor& grad = c.input(1);
  Geometry g = PoolKernelGeometry(c, input, nullptr);
  Tensor out = c.AllocateOutput(0, Shape{g.batch, g.out_h, g.out_w, g.channels});
  SwitchFloat(input.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data<T>();
    const T* gr = grad.data<T>();
    T* y = out.data<T>();
    const int64_t ch = g.channels;
    c.pool().ParallelFor(g.batch, ImagesPerChunk(g), [&](int64_t n0, int64_t n1) {
      std::vector<T> best(ch);
      std::vector<int64_t> where(ch);
      internal::Vectorized([&] {
        ForEachWindow(g, n0, n1,
                      [&](int64_t n, int64_t oh, int64_t ow, int64_t h_lo, int64_t h_hi,
                          int64_t w_lo, int64_t w_hi) {
                        T* o = y + ((n * g.out_h + oh) * g.out_w + ow) * ch;
                        if (h_lo >= h_hi || w_lo >= w_hi) {
                          std::fill(o, o + ch, T(0));
                          return;
                        }
                        WindowArgmax(g, x, n, h_lo, h_hi, w_lo, w_hi, best.data(), where.data());
                        for (int64_t j = 0; j < ch; ++j) o[j] = gr[where[j]];
                      });
      });
    });
    return 0;
  });
}

}  // namespace

void nn_internal::MaxPoolGradRelu(KernelContext& c, const Tensor& features, Tensor* bias_grad) {
  const Tensor& input = c.input(0);
  const Tensor& dy = c.input(1);
  Geometry g = PoolKernelGeometry(c, input, &dy);
  if (!WindowsTile(g) || !CoversInput(g) || g_general_max_pool.load(std::memory_order_relaxed) ||
      features.dtype() != input.dtype()) {
    Tensor out = PoolGradKernel<true>(c);  // then ReluGrad (and BiasAddGrad) in one more pass
    ReluGradAndBiasSum(c.pool(), out, features, out, bias_grad);
    return;
  }
  Tensor dx = c.AllocateOutput(0, input.shape());
  SwitchFloat(input.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const int64_t ch = g.channels;
    std::vector<T> partial(bias_grad != nullptr ? g.batch * ch : 0, T(0));
    c.pool().ParallelFor(g.batch, ImagesPerChunk(g), [&](int64_t n0, int64_t n1) {
      std::vector<T> best(ch), todo(ch);
      internal::Vectorized([&] {
        if (bias_grad != nullptr) {
          MaxPoolGradTiled<T, true, true>(g, input.data<T>(), dy.data<T>(), dx.data<T>(), n0, n1,
                                          best.data(), todo.data(), features.data<T>(),
                                          partial.data());
        } else {
          MaxPoolGradTiled<T, true, false>(g, input.data<T>(), dy.data<T>(), dx.data<T>(), n0, n1,
                                           best.data(), todo.data(), features.data<T>());
        }
      });
    });
    if (bias_grad == nullptr) return 0;
    // Summed over images in order: the bits do not depend on the thread count.
    T* db = bias_grad->data<T>();
    std::fill(db, db + ch, T(0));
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t j = 0; j < ch; ++j) db[j] += partial[n * ch + j];
    }
    return 0;
  });
}

namespace {

void PoolGradShape(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  c.ExpectSameDType(0, 1);
  c.ExpectRank(0, 4);
  c.ExpectRank(1, 4);
  c.set_output(0, c.input_dtype(0), c.input_shape(0));
}

const OpDef& AvgPoolOp();
const OpDef& MaxPoolGradOp();
const OpDef& MaxPoolGradGradOp();

// MaxPool / AvgPool and their gradients: one record shape, the kernel chosen by kMax.
// Both gradients are linear in dy (input 1) and constant in the input almost everywhere
// (AvgPoolGrad reads only its shape; MaxPoolGrad's routing is piecewise constant, as TF
// has it), so their own gradients are their adjoints in dy: MaxPoolGradGrad and AvgPool.
OpDef MakePoolGradOp(bool max) {
  return {
      .name = max ? "MaxPoolGrad" : "AvgPoolGrad",
      .num_inputs = 2,
      .attrs = {kKsize.Required(), kStrides.Required(), PaddingDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = PoolGradShape,
      .kernel = max ? KernelFn([](KernelContext& c) { PoolGradKernel<true>(c); })
                    : KernelFn([](KernelContext& c) { PoolGradKernel<false>(c); }),
      .grad = [max](const GradContext& g) -> std::vector<GradOutput> {
        // d/d dy <G, MaxPoolGrad(x, dy)> = G at each window's routed element;
        // d/d dy <G, AvgPoolGrad(x, dy)> = AvgPool(G) (the same 1 / count per window).
        if (max) return {GradOutput(), AddGradOp(g, MaxPoolGradGradOp(), {g.input(0), g.grad(0)})};
        return {GradOutput(), AddGradOp(g, AvgPoolOp(), {g.grad(0)})};
      },
      .not_swept = StrCat("built only by ", max ? "MaxPool" : "AvgPool",
                          "'s gradient rule; its gradient check covers it"),
  };
}

// MaxPoolGradGrad(x, g): shaped as MaxPool(x). Linear in g; its gradient is MaxPoolGrad of
// the incoming gradient (so any order of derivative is defined), none for x.
const OpDef& MaxPoolGradGradOp() {
  static const OpDef op = {
      .name = "MaxPoolGradGrad",
      .num_inputs = 2,
      .attrs = {kKsize.Required(), kStrides.Required(), PaddingDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectSameDType(0, 1);
            c.ExpectRank(1, 4);
            PoolShape(c);
          },
      .kernel = MaxPoolGradGradKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {GradOutput(), AddGradOp(g, MaxPoolGradOp(), {g.input(0), g.grad(0)})};
      },
      .not_swept = "built only by MaxPoolGrad's gradient rule; its gradient check covers it",
  };
  return op;
}

OpDef MakePoolOp(bool max, const OpDef& (*grad_op)()) {
  return {
      .name = max ? "MaxPool" : "AvgPool",
      .num_inputs = 1,
      .attrs = {kKsize.Required(), kStrides.Required(), PaddingDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = PoolShape,
      .kernel = max ? KernelFn(PoolKernel<true>) : KernelFn(PoolKernel<false>),
      .grad = [grad_op](const GradContext& g) -> std::vector<GradOutput> {
        return {AddGradOp(g, grad_op(), {g.input(0), g.grad(0)})};
      },
      .sample =
          [max] {
            const int64_t stride = max ? 2 : 1;
            return OpSample{{SampleDoubles({1, 4, 4, 2})},
                            {kKsize(std::vector<int64_t>{1, 2, 2, 1}),
                             kStrides(std::vector<int64_t>{1, stride, stride, 1}),
                             kPadding(max ? "VALID" : "SAME")}};
          },
  };
}

const OpDef& MaxPoolGradOp() {
  static const OpDef op = MakePoolGradOp(true);
  return op;
}

const OpDef& AvgPoolGradOp() {
  static const OpDef op = MakePoolGradOp(false);
  return op;
}

const OpDef& MaxPoolOp() {
  static const OpDef op = MakePoolOp(true, MaxPoolGradOp);
  return op;
}

const OpDef& AvgPoolOp() {
  static const OpDef op = MakePoolOp(false, AvgPoolGradOp);
  return op;
}

Output Pool(const Scope& scope, const OpDef& op, Input value, const std::vector<int64_t>& ksize,
            const std::vector<int64_t>& strides, const std::string& padding) {
  const std::string what = op.name + " '" + scope.FullName(op.name) + "': ";
  return scope
      .AddNode(op, {AsOutput(scope, value)},
               {kKsize(NhwcAttr((what + "ksize").c_str(), ksize)),
                kStrides(NhwcAttr((what + "strides").c_str(), strides)), kPadding(padding)},
               op.name)
      ->output(0);
}

}  // namespace

Output MaxPool(const Scope& scope, Input value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding) {
  return Pool(scope, MaxPoolOp(), value, ksize, strides, padding);
}

Output AvgPool(const Scope& scope, Input value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding) {
  return Pool(scope, AvgPoolOp(), value, ksize, strides, padding);
}

nn_internal::ScopedGeneralMaxPool::ScopedGeneralMaxPool() { g_general_max_pool.fetch_add(1); }
nn_internal::ScopedGeneralMaxPool::~ScopedGeneralMaxPool() { g_general_max_pool.fetch_sub(1); }

void nn_internal::RegisterNnPoolOps(OpRegistry& registry) {
  for (const OpDef* op :
       {&MaxPoolOp(), &MaxPoolGradOp(), &MaxPoolGradGradOp(), &AvgPoolOp(), &AvgPoolGradOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
