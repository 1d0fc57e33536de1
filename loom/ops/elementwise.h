#ifndef LOOM_OPS_ELEMENTWISE_H_
#define LOOM_OPS_ELEMENTWISE_H_

// Internal kernel helpers for the math family (math.cc, reduce.cc, matmul.cc): a parallel
// unary map, and NumPy broadcasting over N inputs. Not a public API.
//
// Broadcasting is planned once per kernel call: output dims of size 1 are dropped and
// adjacent dims in which every input either matches or broadcasts alike are merged, so
// [2,3]+[2,3] becomes one flat run, [n,k]+[k] becomes rows of k with the second input
// restarting each row, and a scalar becomes a stride-0 run. Kernels then see contiguous
// row segments with an inner stride of 0 or 1 per input and run tight loops over raw
// pointers; there is no per-element call through std::function or a virtual.
// Thread-safety: the helpers split work over ThreadPool::ParallelFor; chunks write
// disjoint output ranges.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "loom/base/thread_pool.h"
#include "loom/graph/op_def.h"
#include "loom/ops/vector_isa.h"
#include "loom/tensor/dim_vector.h"

namespace loom::internal {

// Every loop below runs through Vectorized (vector_isa.h): compiled for baseline x86-64
// and for AVX2, the copy chosen at run time; both give bitwise equal results.

// Work below this many elements stays on the calling thread.
inline constexpr int64_t kMinParallelChunk = 16384;

// out[i] = f(in[i]) for i in [0, n). `out` may equal `in` (in-place).
template <typename TIn, typename TOut, typename F>
void UnaryMap(ThreadPool& pool, const TIn* in, TOut* out, int64_t n, F f) {
  pool.ParallelFor(n, kMinParallelChunk, [&](int64_t begin, int64_t end) {
    Vectorized([&] {
      for (int64_t i = begin; i < end; ++i) out[i] = f(in[i]);
    });
  });
}

// A broadcast of N inputs to an output shape, with collapsed dims.
template <int N>
struct BroadcastPlan {
  DimVector dims;                      // collapsed output dims, at least one
  std::array<DimVector, N> strides{};  // per input, in elements; 0 = broadcast
  int64_t num_elements = 0;
  int64_t inner() const { return dims.back(); }
  int64_t inner_stride(int i) const { return strides[i].back(); }
};

// REQUIRES: every input shape broadcasts to `out` (all shapes fully defined).
template <int N>
BroadcastPlan<N> MakeBroadcastPlan(const std::array<const Shape*, N>& inputs, const Shape& out) {
  BroadcastPlan<N> plan;
  plan.num_elements = out.num_elements();
  const int rank = out.rank();
  // For each output dim of size > 1: which inputs vary along it (bit i set).
  DimVector dims, masks;  // DimVector: no heap allocation at the usual ranks
  for (int d = 0; d < rank; ++d) {
    const int64_t size = out.dims()[d];
    if (size == 1) continue;
    int64_t mask = 0;
    for (int i = 0; i < N; ++i) {
      const int in_d = inputs[i]->rank() - rank + d;
      if (in_d >= 0 && inputs[i]->dims()[in_d] != 1) mask |= int64_t{1} << i;
    }
    if (!dims.empty() && masks.back() == mask) {
      dims.back() *= size;
    } else {
      dims.push_back(size);
      masks.push_back(mask);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    masks.push_back((int64_t{1} << N) - 1);
  }
  plan.dims = std::move(dims);
  for (int i = 0; i < N; ++i) {
    plan.strides[i].assign(plan.dims.size(), 0);
    int64_t running = 1;
    for (int d = static_cast<int>(plan.dims.size()) - 1; d >= 0; --d) {
      if (masks[d] & (int64_t{1} << i)) {
        plan.strides[i][d] = running;
        running *= plan.dims[d];
      }
    }
  }
  return plan;
}

// Calls body(out_offset, in_offsets, length) for contiguous output segments covering the
// plan's elements, in parallel. Within a segment, input i advances by inner_stride(i)
// (0 or 1) per element.
template <int N, typename Body>
void ForEachSegment(ThreadPool& pool, const BroadcastPlan<N>& plan, Body body) {
  const int64_t inner = plan.inner();
  const int outer_rank = static_cast<int>(plan.dims.size()) - 1;
  pool.ParallelFor(plan.num_elements, kMinParallelChunk, [&](int64_t begin, int64_t end) {
    int64_t row = begin / inner, col = begin % inner;
    DimVector index(outer_rank, 0);
    for (int d = outer_rank - 1; d >= 0; --d) {
      index[d] = row % plan.dims[d];
      row /= plan.dims[d];
    }
    int64_t pos = begin;
    while (pos < end) {
      std::array<int64_t, N> offsets;
      for (int i = 0; i < N; ++i) {
        int64_t off = col * plan.strides[i][outer_rank];
        for (int d = 0; d < outer_rank; ++d) off += index[d] * plan.strides[i][d];
        offsets[i] = off;
      }
      const int64_t len = std::min(inner - col, end - pos);
      body(pos, offsets, len);
      pos += len;
      col = 0;
      for (int d = outer_rank - 1; d >= 0; --d) {
        if (++index[d] < plan.dims[d]) break;
        index[d] = 0;
      }
    }
  });
}

// out = f(a, b) with broadcasting; `out` may alias an input whose shape is the output's.
template <typename TA, typename TB, typename TO, typename F>
void BinaryBroadcast(ThreadPool& pool, const Shape& a_shape, const TA* a, const Shape& b_shape,
                     const TB* b, const Shape& out_shape, TO* out, F f) {
  const int64_t n = out_shape.num_elements();
  if (a_shape == b_shape) {
    pool.ParallelFor(n, kMinParallelChunk, [&](int64_t begin, int64_t end) {
      Vectorized([&] {
        for (int64_t i = begin; i < end; ++i) out[i] = f(a[i], b[i]);
      });
    });
    return;
  }
  const BroadcastPlan<2> plan = MakeBroadcastPlan<2>({&a_shape, &b_shape}, out_shape);
  const int64_t sa = plan.inner_stride(0), sb = plan.inner_stride(1);
  ForEachSegment<2>(pool, plan, [&](int64_t pos, const std::array<int64_t, 2>& off, int64_t len) {
    TO* o = out + pos;
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    Vectorized([&] {
      if (sa == 1 && sb == 1) {
        for (int64_t j = 0; j < len; ++j) o[j] = f(pa[j], pb[j]);
      } else if (sa == 1) {
        const TB vb = pb[0];
        for (int64_t j = 0; j < len; ++j) o[j] = f(pa[j], vb);
      } else if (sb == 1) {
        const TA va = pa[0];
        for (int64_t j = 0; j < len; ++j) o[j] = f(va, pb[j]);
      } else {
        const TO v = f(pa[0], pb[0]);
        for (int64_t j = 0; j < len; ++j) o[j] = v;
      }
    });
  });
}

// out = f(a, b, c) with broadcasting (Select, ClipByValue).
template <typename TA, typename TB, typename TC, typename TO, typename F>
void TernaryBroadcast(ThreadPool& pool, const Shape& a_shape, const TA* a, const Shape& b_shape,
                      const TB* b, const Shape& c_shape, const TC* c, const Shape& out_shape,
                      TO* out, F f) {
  const BroadcastPlan<3> plan = MakeBroadcastPlan<3>({&a_shape, &b_shape, &c_shape}, out_shape);
  const int64_t sa = plan.inner_stride(0), sb = plan.inner_stride(1), sc = plan.inner_stride(2);
  ForEachSegment<3>(pool, plan, [&](int64_t pos, const std::array<int64_t, 3>& off, int64_t len) {
    TO* o = out + pos;
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    const TC* pc = c + off[2];
    Vectorized([&] {
      if (sa == 1 && sb == 1 && sc == 1) {
        for (int64_t j = 0; j < len; ++j) o[j] = f(pa[j], pb[j], pc[j]);
      } else if (sa == 1 && sb == 0 && sc == 0) {
        const TB vb = pb[0];
        const TC vc = pc[0];
        for (int64_t j = 0; j < len; ++j) o[j] = f(pa[j], vb, vc);
      } else {
        for (int64_t j = 0; j < len; ++j) o[j] = f(pa[j * sa], pb[j * sb], pc[j * sc]);
      }
    });
  });
}

// Copies `in` (of in_shape, which broadcasts to out_shape) into `out`.
template <typename T>
void BroadcastCopy(ThreadPool& pool, const Shape& in_shape, const T* in, const Shape& out_shape,
                   T* out) {
  const BroadcastPlan<1> plan = MakeBroadcastPlan<1>({&in_shape}, out_shape);
  const int64_t s = plan.inner_stride(0);
  ForEachSegment<1>(pool, plan, [&](int64_t pos, const std::array<int64_t, 1>& off, int64_t len) {
    if (s == 1) {
      std::memcpy(out + pos, in + off[0], len * sizeof(T));
    } else {
      const T v = in[off[0]];
      std::fill(out + pos, out + pos + len, v);
    }
  });
}

// True when the kernel may write output `out` into input `in`'s buffer (the conditions
// of KernelContext::ForwardInputOrAllocate).
inline bool CanForward(const KernelContext& c, int in, int out, const Shape& shape) {
  const Tensor& t = c.input(in);
  return t.BufferIsUnique() && t.buffer()->owned() && t.byte_offset() == 0 &&
         t.dtype() == c.node().output_dtype(out) && t.dtype() != DType::kString &&
         t.shape() == shape;
}

// The output tensor of a broadcasting op: input 0's or 1's buffer when it has the
// output's shape and nothing else views it, else a fresh one.
inline Tensor ForwardAnyInputOrAllocate(KernelContext& c, std::initializer_list<int> inputs,
                                        const Shape& shape) {
  for (int i : inputs) {
    if (CanForward(c, i, 0, shape)) return c.ForwardInputOrAllocate(i, 0, shape);
  }
  return c.AllocateOutput(0, shape);
}

// The broadcast shape of fully defined runtime shapes; fails naming the node.
inline Shape RuntimeBroadcastShape(const KernelContext& c, const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  DimVector dims(rank, 0);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a.dims()[ia] : 1;
    const int64_t db = ib >= 0 ? b.dims()[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      c.Fail("shapes ", a, " and ", b, " cannot be broadcast: dimension ", i, " is ", da, " vs ",
             db);
    }
    dims[i] = da == 1 ? db : da;
  }
  return Shape(std::move(dims));
}

}  // namespace loom::internal

#endif  // LOOM_OPS_ELEMENTWISE_H_
