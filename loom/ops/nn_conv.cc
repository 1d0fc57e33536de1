// Conv2D (im2col + one GEMM per batch chunk) with its input/filter backprops, and
// MaxPool/AvgPool with their gradients. All NHWC.
#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>

#include "loom/ops/blas.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_internal.h"

namespace loom {
namespace {

// The im2col buffer holds at most this many elements; larger batches run in chunks.
constexpr int64_t kMaxColElements = int64_t{1} << 22;

// {height, width} from a 2-entry attr or TF's 4-entry NHWC form [1, h, w, 1].
template <typename Ctx>
std::pair<int64_t, int64_t> SpatialAttr(const Ctx& c, const char* name) {
  const auto& v = c.template attr<std::vector<int64_t>>(name);
  if (v.size() != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1) {
    c.Fail("attribute '", name, "' must be [1, height, width, 1] with positive sizes, got ",
           AttrValueToString(v));
  }
  return {v[1], v[2]};
}

std::vector<int64_t> NhwcAttr(const char* what, const std::vector<int64_t>& hw) {
  if (hw.size() == 4) return hw;
  if (hw.size() != 2) {
    throw InvalidArgument(what, " must have 2 entries {height, width}, got ", hw.size());
  }
  return {1, hw[0], hw[1], 1};
}

template <typename Ctx>
bool IsSame(const Ctx& c) {
  const auto& p = c.template attr<std::string>("padding");
  if (p != "SAME" && p != "VALID") c.Fail("padding must be \"SAME\" or \"VALID\", got \"", p, "\"");
  return p == "SAME";
}

// TF's GetWindowedOutputSize: the output size and leading padding along one dimension.
// Returns false when a VALID window does not fit.
bool WindowedOutput(int64_t in, int64_t k, int64_t stride, bool same, int64_t* out,
                    int64_t* pad_before) {
  if (same) {
    *out = (in + stride - 1) / stride;
    const int64_t pad_total = std::max<int64_t>((*out - 1) * stride + k - in, 0);
    *pad_before = pad_total / 2;
    return true;
  }
  *pad_before = 0;
  *out = in >= k ? (in - k) / stride + 1 : 0;
  return in >= k;
}

// The geometry of one windowed op over NHWC input: window kh x kw, strides, padding.
struct Geometry {
  int64_t batch, in_h, in_w, channels;
  int64_t k_h, k_w, stride_h, stride_w;
  int64_t out_h, out_w, pad_top, pad_left;
};

template <typename Ctx>
Geometry MakeGeometry(const Ctx& c, const Shape& input, int64_t k_h, int64_t k_w) {
  Geometry g{};
  g.batch = input.dim(0);
  g.in_h = input.dim(1);
  g.in_w = input.dim(2);
  g.channels = input.dim(3);
  g.k_h = k_h;
  g.k_w = k_w;
  std::tie(g.stride_h, g.stride_w) = SpatialAttr(c, "strides");
  const bool same = IsSame(c);
  g.out_h = g.out_w = kUnknownDim;
  if (g.in_h != kUnknownDim && k_h != kUnknownDim &&
      !WindowedOutput(g.in_h, k_h, g.stride_h, same, &g.out_h, &g.pad_top)) {
    c.Fail("input height ", g.in_h, " is smaller than the window height ", k_h,
           " with VALID padding (input shape ", input, ")");
  }
  if (g.in_w != kUnknownDim && k_w != kUnknownDim &&
      !WindowedOutput(g.in_w, k_w, g.stride_w, same, &g.out_w, &g.pad_left)) {
    c.Fail("input width ", g.in_w, " is smaller than the window width ", k_w,
           " with VALID padding (input shape ", input, ")");
  }
  return g;
}

// Copies one image's receptive fields into rows of `col`: row (oh, ow) holds the
// k_h x k_w x channels window, zeros where it hangs over the border.
template <typename T>
void Im2Col(const T* image, const Geometry& g, T* col) {
  const int64_t c = g.channels, row_len = g.k_h * g.k_w * c;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const int64_t ih0 = oh * g.stride_h - g.pad_top;
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const int64_t iw0 = ow * g.stride_w - g.pad_left;
      const int64_t kw_lo = std::max<int64_t>(0, -iw0);
      const int64_t kw_hi = std::min<int64_t>(g.k_w, g.in_w - iw0);
      T* dst = col + (oh * g.out_w + ow) * row_len;
      for (int64_t kh = 0; kh < g.k_h; ++kh, dst += g.k_w * c) {
        const int64_t ih = ih0 + kh;
        if (ih < 0 || ih >= g.in_h || kw_lo >= kw_hi) {
          std::fill(dst, dst + g.k_w * c, T(0));
          continue;
        }
        std::fill(dst, dst + kw_lo * c, T(0));
        std::memcpy(dst + kw_lo * c, image + (ih * g.in_w + iw0 + kw_lo) * c,
                    (kw_hi - kw_lo) * c * sizeof(T));
        std::fill(dst + kw_hi * c, dst + g.k_w * c, T(0));
      }
    }
  }
}

// The adjoint of Im2Col: zeroes `image` and adds each row of `col` back into its window.
template <typename T>
void Col2Im(const T* col, const Geometry& g, T* image) {
  const int64_t c = g.channels, row_len = g.k_h * g.k_w * c;
  std::fill(image, image + g.in_h * g.in_w * c, T(0));
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const int64_t ih0 = oh * g.stride_h - g.pad_top;
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const int64_t iw0 = ow * g.stride_w - g.pad_left;
      const int64_t kw_lo = std::max<int64_t>(0, -iw0);
      const int64_t kw_hi = std::min<int64_t>(g.k_w, g.in_w - iw0);
      const T* src = col + (oh * g.out_w + ow) * row_len;
      for (int64_t kh = 0; kh < g.k_h; ++kh, src += g.k_w * c) {
        const int64_t ih = ih0 + kh;
        if (ih < 0 || ih >= g.in_h || kw_lo >= kw_hi) continue;
        T* dst = image + (ih * g.in_w + iw0 + kw_lo) * c;
        const T* s = src + kw_lo * c;
        for (int64_t j = 0, n = (kw_hi - kw_lo) * c; j < n; ++j) dst[j] += s[j];
      }
    }
  }
}

// ---- Conv2D ----

// Checks input/filter (and out_backprop, when given) at run time; returns the geometry.
Geometry ConvGeometry(const KernelContext& c, const Shape& input, const Shape& filter,
                      const Tensor* out_backprop) {
  if (input.rank() != 4 || filter.rank() != 4) {
    c.Fail("input must be NHWC (rank 4) and filter HWIO (rank 4), got ", input, " and ", filter);
  }
  if (input.dim(3) != filter.dim(2)) {
    c.Fail("input channels ", input.dim(3), " (input shape ", input,
           ") do not match the filter's in_channels ", filter.dim(2), " (filter shape ", filter,
           ")");
  }
  Geometry g = MakeGeometry(c, input, filter.dim(0), filter.dim(1));
  if (out_backprop != nullptr) {
    Shape expected{g.batch, g.out_h, g.out_w, filter.dim(3)};
    if (out_backprop->shape() != expected) {
      c.Fail("out_backprop has shape ", out_backprop->shape(), ", expected ", expected);
    }
  }
  return g;
}

bool IsPointwise(const Geometry& g) {
  return g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1;
}

// The im2col buffer, kept in the Session between runs: allocating tens of MB per step
// costs more in page faults than the im2col copy itself. One per Session; a kernel that
// finds it busy (a concurrent Run) allocates its own. The Session's unnamed resource of
// this type (ResourceMgr::Unnamed), so no graph name can collide with it.
class ConvScratch : public Resource {
 public:
  // Calls fn(col) with a uint8 buffer of at least `bytes`: the kept one (grown when too
  // small) when it is free, else a fresh one.
  template <typename Fn>
  void WithBuffer(size_t bytes, const Fn& fn) LOOM_LOCKS_EXCLUDED(mu_) {
    if (!mu_.TryLock()) {
      fn(Tensor(kUInt8, Shape{static_cast<int64_t>(bytes)}));
      return;
    }
    try {
      if (buffer_.TotalBytes() < bytes) {
        buffer_ = Tensor();  // free the old buffer before allocating the larger one
        buffer_ = Tensor(kUInt8, Shape{static_cast<int64_t>(bytes)});
      }
      fn(buffer_);
    } catch (...) {
      mu_.Unlock();
      throw;
    }
    mu_.Unlock();
  }

 private:
  Mutex mu_;
  Tensor buffer_ LOOM_GUARDED_BY(mu_);  // uint8, grown on demand
};

// Runs fn(first_image, num_images, col) over batch chunks whose im2col matrix fits in
// kMaxColElements; col has room for num_images * out_h * out_w rows.
template <typename T, typename Fn>
void ForEachBatchChunk(const KernelContext& c, const Geometry& g, const Fn& fn) {
  const int64_t per_image = std::max<int64_t>(1, g.out_h * g.out_w * g.k_h * g.k_w * g.channels);
  const int64_t chunk = std::clamp<int64_t>(kMaxColElements / per_image, 1, g.batch);
  const size_t bytes = chunk * per_image * sizeof(T);
  c.resources().Unnamed<ConvScratch>().WithBuffer(bytes, [&](const Tensor& col) {
    T* data = static_cast<T*>(col.raw_data());
    for (int64_t n0 = 0; n0 < g.batch; n0 += chunk) fn(n0, std::min(chunk, g.batch - n0), data);
  });
}

void Conv2DKernel(KernelContext& c) {
  const Tensor& input = c.input(0);
  const Tensor& filter = c.input(1);
  Geometry g = ConvGeometry(c, input.shape(), filter.shape(), nullptr);
  const int64_t out_c = filter.dim(3), k = g.k_h * g.k_w * g.channels;
  const int64_t rows_per_image = g.out_h * g.out_w;
  Tensor out = c.AllocateOutput(0, Shape{g.batch, g.out_h, g.out_w, out_c});
  if (out.NumElements() == 0) return;
  SwitchFloat(input.dtype(), "Conv2D", [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    T* y = out.data<T>();
    if (k == 0) {
      std::fill(y, y + out.NumElements(), T(0));
    } else if (IsPointwise(g)) {
      Gemm(false, false, g.batch * rows_per_image, out_c, k, T(1), x, k, w, out_c, T(0), y, out_c);
    } else {
      const int64_t image_size = g.in_h * g.in_w * g.channels;
      ForEachBatchChunk<T>(c, g, [&](int64_t n0, int64_t nb, T* col) {
        c.pool().ParallelFor(nb, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            Im2Col(x + (n0 + i) * image_size, g, col + i * rows_per_image * k);
          }
        });
        Gemm(false, false, nb * rows_per_image, out_c, k, T(1), col, k, w, out_c, T(0),
             y + n0 * rows_per_image * out_c, out_c);
      });
    }
    return 0;
  });
}

// d input = col2im(d out * filter^T)
void Conv2DBackpropInputKernel(KernelContext& c) {
  const Tensor& input = c.input(0);  // only its shape is used
  const Tensor& filter = c.input(1);
  const Tensor& dy = c.input(2);
  Geometry g = ConvGeometry(c, input.shape(), filter.shape(), &dy);
  const int64_t out_c = filter.dim(3), k = g.k_h * g.k_w * g.channels;
  const int64_t rows_per_image = g.out_h * g.out_w;
  Tensor dx = c.AllocateOutput(0, input.shape());
  SwitchFloat(input.dtype(), "Conv2DBackpropInput", [&](auto tag) {
    using T = decltype(tag);
    const T* w = filter.data<T>();
    const T* dout = dy.data<T>();
    T* din = dx.data<T>();
    if (dx.NumElements() == 0) return 0;
    if (k == 0 || out_c == 0 || rows_per_image == 0) {
      std::fill(din, din + dx.NumElements(), T(0));
    } else if (IsPointwise(g)) {
      Gemm(false, true, g.batch * rows_per_image, k, out_c, T(1), dout, out_c, w, out_c, T(0),
           din, k);
    } else {
      const int64_t image_size = g.in_h * g.in_w * g.channels;
      ForEachBatchChunk<T>(c, g, [&](int64_t n0, int64_t nb, T* col) {
        Gemm(false, true, nb * rows_per_image, k, out_c, T(1),
             dout + n0 * rows_per_image * out_c, out_c, w, out_c, T(0), col, k);
        c.pool().ParallelFor(nb, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            Col2Im(col + i * rows_per_image * k, g, din + (n0 + i) * image_size);
          }
        });
      });
    }
    return 0;
  });
}

// d filter = im2col(input)^T * d out, accumulated over batch chunks.
void Conv2DBackpropFilterKernel(KernelContext& c) {
  const Tensor& input = c.input(0);
  const Tensor& filter = c.input(1);  // only its shape is used
  const Tensor& dy = c.input(2);
  Geometry g = ConvGeometry(c, input.shape(), filter.shape(), &dy);
  const int64_t out_c = filter.dim(3), k = g.k_h * g.k_w * g.channels;
  const int64_t rows_per_image = g.out_h * g.out_w;
  Tensor dw = c.AllocateOutput(0, filter.shape());
  SwitchFloat(input.dtype(), "Conv2DBackpropFilter", [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data<T>();
    const T* dout = dy.data<T>();
    T* dfilter = dw.data<T>();
    if (dw.NumElements() == 0) return 0;
    if (g.batch * rows_per_image == 0) {
      std::fill(dfilter, dfilter + dw.NumElements(), T(0));
    } else if (IsPointwise(g)) {
      Gemm(true, false, k, out_c, g.batch * rows_per_image, T(1), x, k, dout, out_c, T(0),
           dfilter, out_c);
    } else {
      const int64_t image_size = g.in_h * g.in_w * g.channels;
      ForEachBatchChunk<T>(c, g, [&](int64_t n0, int64_t nb, T* col) {
        c.pool().ParallelFor(nb, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            Im2Col(x + (n0 + i) * image_size, g, col + i * rows_per_image * k);
          }
        });
        Gemm(true, false, k, out_c, nb * rows_per_image, T(1), col, k,
             dout + n0 * rows_per_image * out_c, out_c, n0 == 0 ? T(0) : T(1), dfilter, out_c);
      });
    }
    return 0;
  });
}

void ConvShapeChecks(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  c.ExpectSameDType(0, 1);
  c.ExpectRank(0, 4);
  c.ExpectRank(1, 4);
  const Shape& in = c.input_shape(0);
  const Shape& f = c.input_shape(1);
  if (in.rank_known() && f.rank_known() && in.dim(3) != kUnknownDim &&
      f.dim(2) != kUnknownDim && in.dim(3) != f.dim(2)) {
    c.Fail("input channels ", in.dim(3), " (input shape ", in,
           ") do not match the filter's in_channels ", f.dim(2), " (filter shape ", f, ")");
  }
  SpatialAttr(c, "strides");
  IsSame(c);
}

const char* const kNoConvSecondDerivative = "second derivatives of Conv2D are not implemented";

const OpDef& Conv2DBackpropInputOp() {
  static const OpDef op = {
      .name = "Conv2DBackpropInput",
      .num_inputs = 3,
      .shape =
          [](InferenceContext& c) {
            ConvShapeChecks(c);
            c.set_output(0, c.input_dtype(0), c.input_shape(0));
          },
      .kernel = Conv2DBackpropInputKernel,
      .no_gradient = kNoConvSecondDerivative,
  };
  return op;
}

const OpDef& Conv2DBackpropFilterOp() {
  static const OpDef op = {
      .name = "Conv2DBackpropFilter",
      .num_inputs = 3,
      .shape =
          [](InferenceContext& c) {
            ConvShapeChecks(c);
            c.set_output(0, c.input_dtype(0), c.input_shape(1));
          },
      .kernel = Conv2DBackpropFilterKernel,
      .no_gradient = kNoConvSecondDerivative,
  };
  return op;
}

Output AddGradOp(const GradContext& g, const OpDef& op, std::vector<Output> inputs) {
  return g.scope().AddNode(op, std::move(inputs), g.node().attrs(), op.name)->output(0);
}

const OpDef& Conv2DOp() {
  static const OpDef op = {
      .name = "Conv2D",
      .num_inputs = 2,
      .shape =
          [](InferenceContext& c) {
            ConvShapeChecks(c);
            const Shape& in = c.input_shape(0);
            const Shape& f = c.input_shape(1);
            if (!in.rank_known() || !f.rank_known()) {
              c.set_output(0, c.input_dtype(0), Shape{kUnknownDim, kUnknownDim, kUnknownDim,
                                                      f.rank_known() ? f.dim(3) : kUnknownDim});
              return;
            }
            Geometry g = MakeGeometry(c, in, f.dim(0), f.dim(1));
            c.set_output(0, c.input_dtype(0), Shape{g.batch, g.out_h, g.out_w, f.dim(3)});
          },
      .kernel = Conv2DKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        std::vector<Output> args = {g.input(0), g.input(1), g.grad(0)};
        return {AddGradOp(g, Conv2DBackpropInputOp(), args),
                AddGradOp(g, Conv2DBackpropFilterOp(), args)};
      },
  };
  return op;
}

// ---- Pooling ----

// The in-image part [lo, hi) of the window at output index o along one dimension.
inline void WindowRange(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t in,
                        int64_t* lo, int64_t* hi) {
  const int64_t start = o * stride - pad;
  *lo = std::max<int64_t>(start, 0);
  *hi = std::min<int64_t>(start + k, in);
}

template <typename Ctx>
Geometry PoolGeometry(const Ctx& c, const Shape& input) {
  auto [k_h, k_w] = SpatialAttr(c, "ksize");
  return MakeGeometry(c, input, k_h, k_w);
}

void PoolShape(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  c.ExpectRank(0, 4);
  const Shape& in = c.input_shape(0);
  if (!in.rank_known()) {
    SpatialAttr(c, "ksize");
    SpatialAttr(c, "strides");
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
    c.pool().ParallelFor(g.batch, ImagesPerChunk(g), [&](int64_t n0, int64_t n1) {
      ForEachWindow(g, n0, n1, [&](int64_t n, int64_t oh, int64_t ow, int64_t h_lo, int64_t h_hi,
                                   int64_t w_lo, int64_t w_hi) {
        T* o = y + ((n * g.out_h + oh) * g.out_w + ow) * ch;
        std::fill(o, o + ch, kMax ? std::numeric_limits<T>::lowest() : T(0));
        for (int64_t ih = h_lo; ih < h_hi; ++ih) {
          for (int64_t iw = w_lo; iw < w_hi; ++iw) {
            const T* v = x + ((n * g.in_h + ih) * g.in_w + iw) * ch;
            if constexpr (kMax) {
              // NaN propagates (numpy's maximum): once o[j] is NaN nothing replaces it.
              for (int64_t j = 0; j < ch; ++j) o[j] = v[j] > o[j] || v[j] != v[j] ? v[j] : o[j];
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
    return 0;
  });
}

// MaxPoolGrad routes each output gradient to the first maximum of its window (row-major
// scan, as TF's CPU kernel); AvgPoolGrad spreads it evenly over the in-image elements.
template <bool kMax>
void PoolGradKernel(KernelContext& c) {
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
    c.pool().ParallelFor(g.batch, ImagesPerChunk(g), [&](int64_t n0, int64_t n1) {
      std::fill(din + n0 * image_size, din + n1 * image_size, T(0));
      std::vector<T> best(kMax ? ch : 0);
      std::vector<int64_t> where(kMax ? ch : 0);
      ForEachWindow(g, n0, n1, [&](int64_t n, int64_t oh, int64_t ow, int64_t h_lo, int64_t h_hi,
                                   int64_t w_lo, int64_t w_hi) {
        const T* d = dout + ((n * g.out_h + oh) * g.out_w + ow) * ch;
        if constexpr (kMax) {
          if (h_lo >= h_hi || w_lo >= w_hi) return;
          // Start from the window's first element; later ones win only when strictly
          // larger, or when they are the window's first NaN (the element the forward pass
          // returned), so the gradient goes where the NaN came from. Branch-free, so the
          // channel loop vectorizes (over restrict locals: through the captured vectors
          // the trip count could not be computed and the loop stayed scalar).
          const int64_t nc = ch;
          T* __restrict bst = best.data();
          int64_t* __restrict whr = where.data();
          const int64_t first = ((n * g.in_h + h_lo) * g.in_w + w_lo) * nc;
          for (int64_t j = 0; j < nc; ++j) {
            bst[j] = x[first + j];
            whr[j] = first + j;
          }
          for (int64_t ih = h_lo; ih < h_hi; ++ih) {
            for (int64_t iw = w_lo; iw < w_hi; ++iw) {
              const int64_t offset = ((n * g.in_h + ih) * g.in_w + iw) * nc;
              const T* __restrict v = x + offset;
              for (int64_t j = 0; j < nc; ++j) {
                const bool take = !(v[j] <= bst[j]) && bst[j] == bst[j];
                bst[j] = take ? v[j] : bst[j];
                whr[j] = take ? offset + j : whr[j];
              }
            }
          }
          for (int64_t j = 0; j < nc; ++j) din[whr[j]] += d[j];
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
    return 0;
  });
}

void PoolGradShape(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  c.ExpectSameDType(0, 1);
  c.ExpectRank(0, 4);
  c.ExpectRank(1, 4);
  c.set_output(0, c.input_dtype(0), c.input_shape(0));
}

const OpDef& MaxPoolGradOp() {
  static const OpDef op = {
      .name = "MaxPoolGrad",
      .num_inputs = 2,
      .shape = PoolGradShape,
      .kernel = PoolGradKernel<true>,
      .no_gradient = "second derivatives of MaxPool are not implemented",
  };
  return op;
}

const OpDef& AvgPoolGradOp() {
  static const OpDef op = {
      .name = "AvgPoolGrad",
      .num_inputs = 2,
      .shape = PoolGradShape,
      .kernel = PoolGradKernel<false>,
      .no_gradient = "second derivatives of AvgPool are not implemented",
  };
  return op;
}

const OpDef& MaxPoolOp() {
  static const OpDef op = {
      .name = "MaxPool",
      .num_inputs = 1,
      .shape = PoolShape,
      .kernel = PoolKernel<true>,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {AddGradOp(g, MaxPoolGradOp(), {g.input(0), g.grad(0)})};
      },
  };
  return op;
}

const OpDef& AvgPoolOp() {
  static const OpDef op = {
      .name = "AvgPool",
      .num_inputs = 1,
      .shape = PoolShape,
      .kernel = PoolKernel<false>,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {AddGradOp(g, AvgPoolGradOp(), {g.input(0), g.grad(0)})};
      },
  };
  return op;
}

Output Pool(const Scope& scope, const OpDef& op, Input value, const std::vector<int64_t>& ksize,
            const std::vector<int64_t>& strides, const std::string& padding) {
  const std::string what = op.name + " '" + scope.FullName(op.name) + "': ";
  return scope
      .AddNode(op, {AsOutput(scope, value)},
               {{"ksize", NhwcAttr((what + "ksize").c_str(), ksize)},
                {"strides", NhwcAttr((what + "strides").c_str(), strides)},
                {"padding", padding}},
               op.name)
      ->output(0);
}

}  // namespace

Output Conv2D(const Scope& scope, Input input, Input filter, std::vector<int64_t> strides,
              const std::string& padding) {
  Output x = AsOutput(scope, input);
  Output w = AsOutput(scope, filter, x.dtype());
  const std::string what = "Conv2D '" + scope.FullName("Conv2D") + "': strides";
  return scope
      .AddNode(Conv2DOp(), {x, w},
               {{"strides", NhwcAttr(what.c_str(), strides)}, {"padding", padding}}, "Conv2D")
      ->output(0);
}

Output MaxPool(const Scope& scope, Input value, std::vector<int64_t> ksize,
               std::vector<int64_t> strides, const std::string& padding) {
  return Pool(scope, MaxPoolOp(), value, ksize, strides, padding);
}

Output AvgPool(const Scope& scope, Input value, std::vector<int64_t> ksize,
               std::vector<int64_t> strides, const std::string& padding) {
  return Pool(scope, AvgPoolOp(), value, ksize, strides, padding);
}

void nn_internal::RegisterNnConvOps(OpRegistry& registry) {
  for (const OpDef* op : {&Conv2DOp(), &Conv2DBackpropInputOp(), &Conv2DBackpropFilterOp(),
                          &MaxPoolOp(), &MaxPoolGradOp(), &AvgPoolOp(), &AvgPoolGradOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
