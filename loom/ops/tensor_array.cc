// TensorArray as values (tensor_array.h): write, read, stack, unstack and the gradient op
// they share.
#include "loom/ops/tensor_array.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "loom/ops/array.h"
#include "loom/ops/array_internal.h"

namespace loom {

using namespace array_internal;  // NOLINT: the array files' own helpers

namespace {

inline constexpr Attr<std::string> kArrayName{"tensor_array_name"};
inline constexpr Attr<bool> kDynamicSize{"dynamic_size"};

int64_t IndexAt(const Tensor& index, int64_t i) {
  return index.dtype() == kInt32 ? index.data<int32_t>()[i] : index.data<int64_t>()[i];
}

// The array holds element rows (a write allocated it) rather than the empty placeholder.
bool Allocated(const Tensor& data, int64_t n) {
  return n > 0 && data.rank() >= 1 && data.dim(0) == n;
}

// Zeroes `count` elements of t from element `begin` (0 bits are 0.0 and 0 in every dtype).
void ZeroElements(Tensor& t, int64_t begin, int64_t count) {
  SwitchStorage(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(Raw<T>(t) + begin, count, T{});
  });
}

// Copies `count` elements of `from` (from element `from_begin`) into `to` at `to_begin`.
void CopyElements(const Tensor& from, int64_t from_begin, Tensor& to, int64_t to_begin,
                  int64_t count) {
  SwitchStorage(from.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::copy_n(Raw<T>(from) + from_begin, count, Raw<T>(to) + to_begin);
  });
}

// The storage writes fill in place (tensor_array.h, "Cost"): one owned buffer holding
// `capacity` rows of data, the `written` mask of `capacity` int64s, then a trailer naming
// the layout. Every version of the array after its first write views it: data as
// [n, element...] at offset 0, written as [n] at the mask's offset (n <= capacity).
struct StorageTrailer {
  uint64_t magic;
  int64_t capacity;
  int64_t inner;
  int64_t dtype;
};
constexpr uint64_t kStorageMagic = 0x4c6f6f6d54417272;  // "LoomTArr"

size_t MaskOffset(DType dtype, int64_t capacity, int64_t inner) {
  const size_t rows = static_cast<size_t>(capacity * inner) * DTypeSize(dtype);
  return (rows + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

size_t StorageBytes(DType dtype, int64_t capacity, int64_t inner) {
  return MaskOffset(dtype, capacity, inner) + static_cast<size_t>(capacity) * sizeof(int64_t) +
         sizeof(StorageTrailer);
}

// New zeroed storage (every row zero, nothing written).
std::shared_ptr<Buffer> NewStorage(DType dtype, int64_t capacity, int64_t inner) {
  const size_t bytes = StorageBytes(dtype, capacity, inner);
  std::shared_ptr<Buffer> buffer = Buffer::Allocate(kUInt8, static_cast<int64_t>(bytes));
  std::memset(buffer->data(), 0, bytes - sizeof(StorageTrailer));
  const StorageTrailer trailer{kStorageMagic, capacity, inner, static_cast<int64_t>(dtype)};
  std::memcpy(static_cast<char*>(buffer->data()) + bytes - sizeof(StorageTrailer), &trailer,
              sizeof(trailer));
  return buffer;
}

// The capacity of the storage that `data` and `written` view (n rows of `inner` elements
// each), or 0 when they are not one storage's views (the empty placeholder, an unstacked
// value, a fed tensor, strings).
int64_t StorageCapacity(const Tensor& data, const Tensor& written, int64_t inner) {
  const std::shared_ptr<Buffer>& buffer = data.buffer();
  if (!buffer || buffer != written.buffer() || !buffer->owned() || data.byte_offset() != 0 ||
      data.dtype() == kString || buffer->size() < sizeof(StorageTrailer)) {
    return 0;
  }
  StorageTrailer trailer;
  std::memcpy(&trailer,
              static_cast<const char*>(buffer->data()) + buffer->size() - sizeof(StorageTrailer),
              sizeof(trailer));
  if (trailer.magic != kStorageMagic || trailer.inner != inner ||
      trailer.dtype != static_cast<int64_t>(data.dtype()) ||
      buffer->size() != StorageBytes(data.dtype(), trailer.capacity, inner) ||
      written.byte_offset() != MaskOffset(data.dtype(), trailer.capacity, inner)) {
    return 0;
  }
  return trailer.capacity;
}

void ExpectState(InferenceContext& c, int written) {
  c.ExpectDType(written, {kInt64});
  c.ExpectRank(written, 1);
}

// [n, element...] from the capacity `n` (or kUnknownDim) and the element shape.
Shape RowsOf(int64_t n, const Shape& element) {
  return element.rank_known() ? element.WithLeadingDim(n) : Shape::Unknown();
}

const OpDef& TensorArrayWriteGradOp();

// Inputs: data, written, index, value. Outputs: data', written'.
const OpDef& TensorArrayWriteOp() {
  static const OpDef op = {
      .name = "TensorArrayWrite",
      .num_inputs = 4,
      .attrs = {kArrayName.Required(), kDynamicSize.Required()},
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(3), DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            ExpectState(c, 1);
            c.ExpectDType(2, {kInt32, kInt64});
            c.ExpectRank(2, 0);
            if (c.input_dtype(0) != c.input_dtype(3)) {
              c.Fail("TensorArray ", c.attr(kArrayName), ": cannot write a ",
                     DTypeName(c.input_dtype(3)), " value into a ", DTypeName(c.input_dtype(0)),
                     " array");
            }
            const Shape& written = c.input_shape(1);
            const int64_t n =
                c.attr(kDynamicSize) || !written.rank_known() ? kUnknownDim : written.dim(0);
            c.set_output(0, c.input_dtype(3), RowsOf(n, c.input_shape(3)));
            c.set_output(1, kInt64, Shape{n});
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& data = c.input(0);
            const Tensor& written = c.input(1);
            const Tensor& value = c.input(3);
            const std::string& name = c.attr(kArrayName);
            const int64_t index = IndexAt(c.input(2), 0);
            const int64_t n = written.NumElements();
            if (index < 0 || (!c.attr(kDynamicSize) && index >= n)) {
              c.Fail("TensorArray ", name, ": Tried to write to index ", index,
                     " but array is not resizeable and size is: ", n);
            }
            const int64_t* was = written.data<int64_t>();
            if (index < n && was[index] != 0) {
              c.Fail("TensorArray ", name, ": Could not write to TensorArray index ", index,
                     " because it has already been written to.");
            }
            const bool allocated = Allocated(data, n);
            if (allocated && data.shape().WithoutLeadingDim() != value.shape()) {
              c.Fail("TensorArray ", name, ": Could not write to TensorArray index ", index,
                     " because the value shape is ", value.shape(),
                     " which is incompatible with the TensorArray's inferred element shape: ",
                     data.shape().WithoutLeadingDim(),
                     " (Loom's TensorArray holds elements of one shape)");
            }
            const int64_t new_n = std::max(n, index + 1);
            const int64_t inner = value.NumElements();
            if (value.dtype() == kString) {  // strings are not kept in a storage
              Tensor out = c.AllocateOutput(0, RowsOf(new_n, value.shape()));
              if (allocated) CopyElements(data, 0, out, 0, n * inner);
              CopyElements(value, 0, out, index * inner, inner);
              Tensor mask = c.AllocateOutput(1, Shape{new_n});
              int64_t* is = mask.data<int64_t>();
              std::copy_n(was, n, is);
              std::fill(is + n, is + new_n, 0);
              is[index] = 1;
              return;
            }
            // In place when the array's storage has room (every write after the first of a
            // fixed-size array, and of a dynamic one until it outgrows its capacity): one
            // element copied. Otherwise a new storage (twice as large when growing) with the
            // rows and marks so far.
            const DType dtype = value.dtype();
            std::shared_ptr<Buffer> storage = data.buffer();
            int64_t capacity = allocated ? StorageCapacity(data, written, inner) : 0;
            if (capacity < new_n) {
              capacity = std::max(new_n, c.attr(kDynamicSize) ? 2 * n : n);
              storage = NewStorage(dtype, capacity, inner);
              Tensor rows = Tensor::FromBuffer(dtype, RowsOf(new_n, value.shape()), storage);
              if (allocated) CopyElements(data, 0, rows, 0, n * inner);
              Tensor marks =
                  Tensor::FromBuffer(kInt64, Shape{n}, storage, MaskOffset(dtype, capacity, inner));
              std::copy_n(was, n, marks.data<int64_t>());
            }
            Tensor out = Tensor::FromBuffer(dtype, RowsOf(new_n, value.shape()), storage);
            Tensor mask = Tensor::FromBuffer(kInt64, Shape{new_n}, storage,
                                             MaskOffset(dtype, capacity, inner));
            // Another version of the array (a TensorArray object of an older flow) may have
            // written this index into the shared storage: TF's resource says the same.
            if (mask.data<int64_t>()[index] != 0) {
              c.Fail("TensorArray ", name, ": Could not write to TensorArray index ", index,
                     " because it has already been written to.");
            }
            CopyElements(value, 0, out, index * inner, inner);
            mask.data<int64_t>()[index] = 1;
            c.set_output(0, out);
            c.set_output(1, mask);
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        if (!g.grad(0).valid()) return {GradOutput(), GradOutput(), GradOutput(), GradOutput()};
        const Scope& s = g.scope();
        // d value = the written row; d data = d data' without the written row (and without
        // the rows the write added). Built in this order so that the WriteGrad reads d data'
        // last and may zero the row in place (a loop's gradient region moves last reads).
        Output d_value = Gather(s, g.grad(0), g.input(2));
        Output d_data = s.AddNode(TensorArrayWriteGradOp(), {g.grad(0), g.input(0), g.input(2)}, {},
                                  "TensorArrayWriteGrad")
                            ->output(0);
        return {d_data, GradOutput(), GradOutput(), d_value};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), Tensor::FromVector<int64_t>({1, 0}),
                             Tensor::Scalar<int64_t>(1), SampleDoubles({3}, 2)},
                            {kArrayName("ta"), kDynamicSize(false)},
                            false};
          },
  };
  return op;
}

// Inputs: dy (of [m, element...]), like (the tensor whose gradient this is), index.
// Output: shaped like `like`: its first like.dim(0) rows taken from dy, row `index` zero
// (none when index is -1); all zeros when `like` is the empty placeholder.
const OpDef& TensorArrayWriteGradOp() {
  static const OpDef op = {
      .name = "TensorArrayWriteGrad",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(2, {kInt32, kInt64});
            c.set_output(0, c.input_dtype(0), c.input_shape(1));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& dy = c.input(0);
            const Tensor& like = c.input(1);
            const int64_t index = IndexAt(c.input(2), 0);
            if (dy.shape() == like.shape() && like.rank() > 0 && like.NumElements() > 0) {
              // The common case (no rows added): dy with row `index` zeroed, in place when
              // nothing else views dy.
              Tensor out = c.ForwardInputOrAllocate(0, 0, like.shape());
              if (!out.SharesBufferWith(dy)) CopyElements(dy, 0, out, 0, dy.NumElements());
              const int64_t inner = like.NumElements() / like.dim(0);
              if (index >= 0 && index < like.dim(0)) ZeroElements(out, index * inner, inner);
              return;
            }
            Tensor out = c.AllocateOutput(0, like.shape());
            ZeroElements(out, 0, out.NumElements());
            if (like.rank() == 0 || dy.rank() == 0 || like.NumElements() == 0) return;
            const int64_t rows = std::min(like.dim(0), dy.dim(0));
            const int64_t inner = like.NumElements() / like.dim(0);
            if (dy.NumElements() != dy.dim(0) * inner) {
              c.Fail("the gradient ", dy.shape(), " does not have rows of ", like.shape());
            }
            CopyElements(dy, 0, out, 0, rows * inner);
            if (index >= 0 && index < rows) ZeroElements(out, index * inner, inner);
          },
      .no_gradient = "TensorArrayWriteGrad is only built by Gradients",
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({3, 2}), SampleDoubles({2, 2}, 2), Tensor::Scalar<int64_t>(0)},
                {},
                false};
          },
  };
  return op;
}

const OpDef& TensorArrayReadGradOp();

// Checks every index of `index` against the array for a read.
void CheckRead(const KernelContext& c, const Tensor& written, const Tensor& index,
               const std::string& name) {
  const int64_t n = written.NumElements();
  const int64_t* was = written.data<int64_t>();
  for (int64_t i = 0; i < index.NumElements(); ++i) {
    const int64_t at = IndexAt(index, i);
    if (at < 0 || at >= n) {
      c.Fail("TensorArray ", name, ": Tried to read from index ", at, " but array size is: ", n);
    }
    if (was[at] == 0) {
      c.Fail("TensorArray ", name, ": Could not read from TensorArray index ", at,
             " because it has not yet been written to.");
    }
  }
}

// Inputs: data, written, index (scalar or vector). Output: the row(s).
const OpDef& TensorArrayReadOp() {
  static const OpDef op = {
      .name = "TensorArrayRead",
      .num_inputs = 3,
      .attrs = {kArrayName.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            ExpectState(c, 1);
            c.ExpectDType(2, {kInt32, kInt64});
            const Shape& data = c.input_shape(0);
            const Shape& index = c.input_shape(2);
            if (!data.rank_known() || data.rank() == 0 || !index.rank_known()) {
              return c.set_output(0, c.input_dtype(0), Shape::Unknown());
            }
            std::vector<int64_t> dims = index.dims();
            const Shape element = data.WithoutLeadingDim();
            dims.insert(dims.end(), element.dims().begin(), element.dims().end());
            c.set_output(0, c.input_dtype(0), Shape(dims));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& data = c.input(0);
            const Tensor& index = c.input(2);
            CheckRead(c, c.input(1), index, c.attr(kArrayName));
            // Something is written, so data holds rows.
            std::vector<int64_t> dims = index.shape().dims();
            const Shape element = data.shape().WithoutLeadingDim();
            dims.insert(dims.end(), element.dims().begin(), element.dims().end());
            Tensor out = c.AllocateOutput(0, Shape(dims));
            const int64_t inner = element.num_elements();
            for (int64_t i = 0; i < index.NumElements(); ++i) {
              CopyElements(data, IndexAt(index, i) * inner, out, i * inner, inner);
            }
          },
      // d data = zeros with dy's rows added at the indices read, as IndexedSlices (Gather's
      // form), so a loop's gradient adds just those rows to a captured array's sum (an
      // array of inputs read at step t); made dense it is what TensorArrayReadGrad computes.
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        if (!g.grad(0).valid()) return {GradOutput(), GradOutput(), GradOutput()};
        const Scope& s = g.scope();
        Output data = g.input(0);
        Output indices = Reshape(s, g.input(2), std::vector<int64_t>{-1});
        const Shape& ds = data.shape();
        Output values;
        if (ds.rank_known() && ds.rank() >= 1 && ds.WithoutLeadingDim().fully_defined()) {
          std::vector<int64_t> dims = {-1};
          const Shape row = ds.WithoutLeadingDim();
          dims.insert(dims.end(), row.dims().begin(), row.dims().end());
          values = Reshape(s, g.grad(0), dims);
        } else {
          Output row_shape = Slice(s, ShapeOf(s, data), {1}, {-1});
          values = Reshape(s, g.grad(0),
                           Concat(s, {Const(s, Tensor::FromVector<int64_t>({-1})), row_shape}, 0));
        }
        return {GradOutput::Sparse(indices, values, ShapeOfOrConst(s, data)), GradOutput(),
                GradOutput()};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), Tensor::FromVector<int64_t>({1, 1}),
                             Tensor::Scalar<int64_t>(1)},
                            {kArrayName("ta")},
                            false};
          },
  };
  return op;
}

// Inputs: dy, data, index. Output: shaped like data, zeros plus dy's rows summed into the
// rows `index` names.
const OpDef& TensorArrayReadGradOp() {
  static const OpDef op = {
      .name = "TensorArrayReadGrad",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(2, {kInt32, kInt64});
            c.set_output(0, c.input_dtype(0), c.input_shape(1));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& dy = c.input(0);
            const Tensor& data = c.input(1);
            const Tensor& index = c.input(2);
            Tensor out = c.AllocateOutput(0, data.shape());
            ZeroElements(out, 0, out.NumElements());
            if (data.rank() == 0 || data.NumElements() == 0) return;
            const int64_t inner = data.NumElements() / data.dim(0);
            SwitchFloat(dy.dtype(), "TensorArrayReadGrad", [&](auto tag) {
              using T = decltype(tag);
              const T* d = dy.data<T>();
              T* o = out.data<T>();
              for (int64_t i = 0; i < index.NumElements(); ++i) {
                T* row = o + IndexAt(index, i) * inner;
                for (int64_t k = 0; k < inner; ++k) row[k] += d[i * inner + k];
              }
              return 0;
            });
          },
      .no_gradient =
          "TensorArrayReadGrad is the dense gradient of TensorArrayRead (now IndexedSlices); "
          "kept so that graphs saved with it still load",
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({3}), SampleDoubles({2, 3}, 2), Tensor::Scalar<int64_t>(1)},
                {},
                false};
          },
  };
  return op;
}

// Inputs: data, written. Output: data, once every index is written.
const OpDef& TensorArrayStackOp() {
  static const OpDef op = {
      .name = "TensorArrayStack",
      .num_inputs = 2,
      .attrs = {kArrayName.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            ExpectState(c, 1);
            c.set_output(0, c.input_dtype(0), c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& written = c.input(1);
            const int64_t* was = written.data<int64_t>();
            for (int64_t i = 0; i < written.NumElements(); ++i) {
              if (was[i] == 0) {
                c.Fail("TensorArray ", c.attr(kArrayName),
                       ": Could not read from TensorArray index ", i,
                       " because it has not yet been written to.");
              }
            }
            c.set_output(0, c.input(0));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {g.grad(0), GradOutput()};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), Tensor::FromVector<int64_t>({1, 1})},
                            {kArrayName("ta")},
                            false};
          },
  };
  return op;
}

// Inputs: written, value. Outputs: data, written'.
const OpDef& TensorArrayUnstackOp() {
  static const OpDef op = {
      .name = "TensorArrayUnstack",
      .num_inputs = 2,
      .attrs = {kArrayName.Required(), kDynamicSize.Required()},
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(1), DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            ExpectState(c, 0);
            const Shape& value = c.input_shape(1);
            if (value.rank_known() && value.rank() == 0) {
              c.Fail("TensorArray ", c.attr(kArrayName), ": cannot unstack a scalar");
            }
            const int64_t m = value.rank_known() ? value.dim(0) : kUnknownDim;
            const int64_t n = c.attr(kDynamicSize) ? kUnknownDim : m;
            c.set_output(
                0, c.input_dtype(1),
                value.rank_known() ? RowsOf(n, value.WithoutLeadingDim()) : Shape::Unknown());
            c.set_output(1, kInt64, Shape{n});
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& written = c.input(0);
            const Tensor& value = c.input(1);
            const std::string& name = c.attr(kArrayName);
            if (value.rank() == 0) c.Fail("TensorArray ", name, ": cannot unstack a scalar");
            const int64_t n = written.NumElements();
            const int64_t m = value.dim(0);
            if (!c.attr(kDynamicSize) && m != n) {
              c.Fail("TensorArray ", name,
                     ": Input value must have first dimension equal to the array size (", m,
                     " vs. ", n, ")");
            }
            const int64_t* was = written.data<int64_t>();
            for (int64_t i = 0; i < n; ++i) {
              if (was[i] != 0) {
                c.Fail("TensorArray ", name, ": Could not write to TensorArray index ", i,
                       " because it has already been written to.");
              }
            }
            const int64_t new_n = std::max(n, m);
            if (new_n == m) {
              c.set_output(0, value);
            } else {  // a dynamic array of n > m: rows m.. stay unwritten
              const int64_t inner = value.NumElements() / std::max<int64_t>(m, 1);
              Tensor out = c.AllocateOutput(0, RowsOf(new_n, value.shape().WithoutLeadingDim()));
              CopyElements(value, 0, out, 0, m * inner);
              ZeroElements(out, m * inner, (new_n - m) * inner);
            }
            Tensor mask = c.AllocateOutput(1, Shape{new_n});
            std::fill_n(mask.data<int64_t>(), new_n, 0);
            std::fill_n(mask.data<int64_t>(), m, 1);
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        if (!g.grad(0).valid()) return {GradOutput(), GradOutput()};
        // d value = the first m rows of d data (index -1: no row dropped).
        const Scope& s = g.scope();
        Output none = Const(s, Tensor::Scalar<int64_t>(-1));
        return {GradOutput(), s.AddNode(TensorArrayWriteGradOp(), {g.grad(0), g.input(1), none}, {},
                                        "TensorArrayWriteGrad")
                                  ->output(0)};
      },
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<int64_t>({0, 0}), SampleDoubles({2, 3})},
                            {kArrayName("ta"), kDynamicSize(false)},
                            false};
          },
  };
  return op;
}

}  // namespace

TensorArrayState TensorArrayWrite(const Scope& scope, Input data, Input written, Input index,
                                  Input value, bool dynamic_size, const std::string& name) {
  Node* node = scope.AddNode(TensorArrayWriteOp(),
                             {AsOutput(scope, data), AsOutput(scope, written),
                              AsOutput(scope, index), AsOutput(scope, value)},
                             {kArrayName(name), kDynamicSize(dynamic_size)}, "TensorArrayWrite");
  return {node->output(0), node->output(1)};
}

Output TensorArrayRead(const Scope& scope, Input data, Input written, Input index,
                       const std::string& name) {
  return scope
      .AddNode(TensorArrayReadOp(),
               {AsOutput(scope, data), AsOutput(scope, written), AsOutput(scope, index)},
               {kArrayName(name)}, "TensorArrayRead")
      ->output(0);
}

Output TensorArrayStack(const Scope& scope, Input data, Input written, const std::string& name) {
  return scope
      .AddNode(TensorArrayStackOp(), {AsOutput(scope, data), AsOutput(scope, written)},
               {kArrayName(name)}, "TensorArrayStack")
      ->output(0);
}

TensorArrayState TensorArrayUnstack(const Scope& scope, Input written, Input value,
                                    bool dynamic_size, const std::string& name) {
  Node* node =
      scope.AddNode(TensorArrayUnstackOp(), {AsOutput(scope, written), AsOutput(scope, value)},
                    {kArrayName(name), kDynamicSize(dynamic_size)}, "TensorArrayUnstack");
  return {node->output(0), node->output(1)};
}

void RegisterTensorArrayOps(OpRegistry& registry) {
  registry.Register(TensorArrayWriteOp());
  registry.Register(TensorArrayWriteGradOp());
  registry.Register(TensorArrayReadOp());
  registry.Register(TensorArrayReadGradOp());
  registry.Register(TensorArrayStackOp());
  registry.Register(TensorArrayUnstackOp());
}

}  // namespace loom
