#include "loom/distribute/collective_ops.h"

#include <cstring>
#include <mutex>

#include "loom/base/check.h"

namespace loom::distribute {
namespace {

Communicator& RequireCommunicator(const KernelContext& c) {
  auto* r = c.resources().Lookup<CommunicatorResource>(kCommunicatorResource);
  if (r == nullptr || !r->comm) {
    throw FailedPrecondition(
        c.node().description(),
        ": no Communicator in this Session; call distribute::AttachCommunicator(session, comm) "
        "after creating it (BroadcastGlobalVariablesHook and the Estimator do it)");
  }
  return *r->comm;
}

template <typename T>
void Scale(T* data, int64_t n, double factor, ThreadPool& pool) {
  const T f = static_cast<T>(factor);
  pool.ParallelFor(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) data[i] *= f;
  });
}

void ScaleBuffer(DType dtype, void* data, int64_t n, double factor, ThreadPool& pool) {
  if (dtype == kFloat32) return Scale(static_cast<float*>(data), n, factor, pool);
  LOOM_CHECK(dtype == kFloat64) << "collective ops take float32/float64 values";
  Scale(static_cast<double*>(data), n, factor, pool);
}

// A node's fusion buffer, kept in the Session between steps: allocating (and faulting
// in) megabytes every step costs more than the copy. Reused only when no tensor from the
// previous step still views it (a fetched gradient keeps its values).
class FusionBufferResource : public Resource {
 public:
  std::mutex mu;
  Tensor buffer;
};

Tensor FusionBuffer(const KernelContext& c, DType dtype, int64_t total) {
  auto* r = c.resources().LookupOrCreate<FusionBufferResource>(
      StrCat("loom.distribute/fusion:", c.node().name()));
  std::lock_guard<std::mutex> lock(r->mu);
  if (!r->buffer.defined() || !r->buffer.BufferIsUnique() || r->buffer.dtype() != dtype ||
      r->buffer.NumElements() != total) {
    r->buffer = Tensor(dtype, Shape{total});
  }
  return r->buffer;
}

template <typename T>
void ScaledCopy(const T* src, T* dst, int64_t n, double factor, ThreadPool& pool) {
  const T f = static_cast<T>(factor);
  pool.ParallelFor(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = src[i] * f;
  });
}

void ScaledCopy(DType dtype, const void* src, void* dst, int64_t n, double factor,
                ThreadPool& pool) {
  if (dtype == kFloat32) {
    return ScaledCopy(static_cast<const float*>(src), static_cast<float*>(dst), n, factor, pool);
  }
  LOOM_CHECK(dtype == kFloat64) << "collective ops take float32/float64 values";
  ScaledCopy(static_cast<const double*>(src), static_cast<double*>(dst), n, factor, pool);
}

const OpDef& AllReduceAverageOp() {
  static const OpDef op = {
      .name = "LoomAllReduceAverage",
      .num_inputs = kVariadic,
      .stateful = true,  // communicates: never folded or deduplicated
      .shape =
          [](InferenceContext& c) {
            if (c.num_inputs() == 0) c.Fail("needs at least one input");
            c.ExpectDType(0, {kFloat32, kFloat64});
            for (int i = 0; i < c.num_inputs(); ++i) {
              c.ExpectSameDType(0, i);
              c.set_output(i, c.input_dtype(i), c.input_shape(i));
            }
          },
      .kernel =
          [](KernelContext& c) {
            Communicator& comm = RequireCommunicator(c);
            const int n = c.num_inputs();
            if (comm.size() == 1) {  // the mean of one value is the value
              for (int i = 0; i < n; ++i) c.set_output(i, c.input(i));
              return;
            }
            const DType dtype = c.input(0).dtype();
            const size_t element = DTypeSize(dtype);
            int64_t total = 0;
            for (int i = 0; i < n; ++i) total += c.input(i).NumElements();
            // The fusion buffer: one message for the whole bucket. Each input is scaled by
            // 1/size as it is copied in (one pass over the bytes), then summed.
            Tensor fused = FusionBuffer(c, dtype, total);
            char* base = static_cast<char*>(fused.raw_data());
            const double scale = 1.0 / comm.size();
            int64_t offset = 0;
            for (int i = 0; i < n; ++i) {
              const Tensor& in = c.input(i);
              ScaledCopy(dtype, in.raw_data(), base + offset * element, in.NumElements(), scale,
                         c.pool());
              offset += in.NumElements();
            }
            comm.AllReduceSum(dtype, base, total);
            offset = 0;
            for (int i = 0; i < n; ++i) {
              const int64_t count = c.input(i).NumElements();
              c.set_output(i, fused.Slice(offset, offset + count).Reshaped(c.input(i).shape()));
              offset += count;
            }
          },
      .no_gradient = "a collective over ranks applied to gradients; not differentiable",
  };
  return op;
}

// Rows from one rank on the wire: int64 k, then k indices (their dtype), then the values.
std::string PackRows(const Tensor& indices, const Tensor& values) {
  const int64_t k = indices.NumElements();
  std::string out(sizeof(int64_t) + indices.TotalBytes() + values.TotalBytes(), '\0');
  std::memcpy(out.data(), &k, sizeof k);
  if (k > 0) {
    std::memcpy(out.data() + sizeof k, indices.raw_data(), indices.TotalBytes());
    std::memcpy(out.data() + sizeof k + indices.TotalBytes(), values.raw_data(),
                values.TotalBytes());
  }
  return out;
}

const OpDef& AllGatherRowsOp() {
  static const OpDef op = {
      .name = "LoomAllGatherRows",
      .num_inputs = 2,
      .stateful = true,
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt32, kInt64});
            c.ExpectRank(0, 1);
            c.ExpectDType(1, {kFloat32, kFloat64});
            const Shape& values = c.input_shape(1);
            if (values.rank_known() && values.rank() == 0) c.Fail("values must have rows");
            c.set_output(0, c.input_dtype(0), Shape{kUnknownDim});
            if (values.rank_known()) {
              std::vector<int64_t> dims = values.dims();
              dims[0] = kUnknownDim;
              c.set_output(1, c.input_dtype(1), Shape(dims));
            } else {
              c.set_output(1, c.input_dtype(1), values);
            }
          },
      .kernel =
          [](KernelContext& c) {
            Communicator& comm = RequireCommunicator(c);
            const Tensor& indices = c.input(0);
            const Tensor& values = c.input(1);
            if (values.shape().dim(0) != indices.NumElements()) {
              c.Fail("indices have ", indices.NumElements(), " entries but values have ",
                     values.shape().dim(0), " rows");
            }
            const double scale = 1.0 / comm.size();
            std::vector<std::string> parts = comm.AllGather(PackRows(indices, values));
            const size_t index_bytes = DTypeSize(indices.dtype());
            int64_t row_elements = 1;
            for (int d = 1; d < values.shape().rank(); ++d) row_elements *= values.shape().dim(d);
            const size_t row_bytes = row_elements * DTypeSize(values.dtype());
            int64_t rows = 0;
            for (const std::string& p : parts) {
              int64_t k;
              std::memcpy(&k, p.data(), sizeof k);
              if (p.size() != sizeof k + k * (index_bytes + row_bytes)) {
                throw InvalidArgument(c.node().description(),
                                      ": ranks disagree on the gradient's row shape ",
                                      values.shape(), " or index dtype; every rank must run "
                                      "the same model");
              }
              rows += k;
            }
            std::vector<int64_t> dims = values.shape().dims();
            dims[0] = rows;
            Tensor out_indices(indices.dtype(), Shape{rows});
            Tensor out_values(values.dtype(), Shape(dims));
            char* pi = static_cast<char*>(out_indices.raw_data());
            char* pv = static_cast<char*>(out_values.raw_data());
            for (const std::string& p : parts) {
              int64_t k;
              std::memcpy(&k, p.data(), sizeof k);
              if (k == 0) continue;
              std::memcpy(pi, p.data() + sizeof k, k * index_bytes);
              std::memcpy(pv, p.data() + sizeof k + k * index_bytes, k * row_bytes);
              pi += k * index_bytes;
              pv += k * row_bytes;
            }
            if (scale != 1.0) {
              ScaleBuffer(values.dtype(), out_values.raw_data(), out_values.NumElements(), scale,
                          c.pool());
            }
            c.set_output(0, out_indices);
            c.set_output(1, out_values);
          },
      .no_gradient = "a collective over ranks applied to gradients; not differentiable",
  };
  return op;
}

}  // namespace

void AttachCommunicator(Session& session, std::shared_ptr<Communicator> comm) {
  LOOM_CHECK(comm != nullptr) << "AttachCommunicator: null communicator";
  session.resources().LookupOrCreate<CommunicatorResource>(kCommunicatorResource)->comm =
      std::move(comm);
}

std::shared_ptr<Communicator> AttachedCommunicator(const ResourceMgr& resources) {
  auto* r = resources.Lookup<CommunicatorResource>(kCommunicatorResource);
  return r == nullptr ? nullptr : r->comm;
}

std::vector<Output> AllReduceAverage(const Scope& scope, const std::vector<Output>& inputs) {
  LOOM_CHECK(!inputs.empty()) << "AllReduceAverage: no inputs";
  Node* node = scope.AddNode(AllReduceAverageOp(), inputs, {}, "AllReduceAverage");
  std::vector<Output> outputs;
  for (int i = 0; i < node->num_outputs(); ++i) outputs.push_back(node->output(i));
  return outputs;
}

std::pair<Output, Output> AllGatherRows(const Scope& scope, Output indices, Output values) {
  Node* node = scope.AddNode(AllGatherRowsOp(), {indices, values}, {}, "AllGatherRows");
  return {node->output(0), node->output(1)};
}

void RegisterDistributeOps(OpRegistry& registry) {
  registry.Register(AllReduceAverageOp());
  registry.Register(AllGatherRowsOp());
}

}  // namespace loom::distribute
