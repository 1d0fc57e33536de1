#include "loom/distribute/collective_ops.h"

#include <cstring>
#include <mutex>

#include "loom/base/check.h"

namespace loom::distribute {
namespace {

inline constexpr Attr<DType> kDType{"dtype"};

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

// A bucket of one input at least this large (a tensor above the fusion threshold) is
// reduced in place, or copied once, instead of through the fusion buffer. Several inputs
// are always fused: one collective per bucket, whatever the sizes (on a busy or
// oversubscribed machine every collective is a rendezvous that costs scheduling latency).
constexpr int64_t kInPlaceBytes = int64_t{1} << 20;

const OpDef& AllReduceSumOp() {
  static const OpDef op = {
      .name = "LoomAllReduceSum",
      .num_inputs = kVariadic,
      .stateful = true,  // communicates: never folded or deduplicated
      .num_outputs = kVariadic,
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
            if (comm.size() == 1) {  // the sum over one rank is the value
              for (int i = 0; i < n; ++i) c.set_output(i, c.input(i));
              return;
            }
            const DType dtype = c.input(0).dtype();
            const size_t element = DTypeSize(dtype);
            std::vector<int> fused_inputs;
            int64_t fused_total = 0;
            for (int i = 0; i < n; ++i) {
              const Tensor& in = c.input(i);
              if (n > 1 || static_cast<int64_t>(in.TotalBytes()) < kInPlaceBytes) {
                fused_inputs.push_back(i);
                fused_total += in.NumElements();
                continue;
              }
              // In place when this kernel holds the only reference, else one copy.
              Tensor out = c.ForwardInputOrAllocate(i, i, in.shape());
              if (out.raw_data() != in.raw_data()) std::memcpy(out.raw_data(), in.raw_data(), in.TotalBytes());
              comm.AllReduceSum(dtype, out.raw_data(), out.NumElements());
              c.set_output(i, out);
            }
            if (fused_inputs.empty()) return;
            Tensor fused = FusionBuffer(c, dtype, fused_total);
            char* base = static_cast<char*>(fused.raw_data());
            int64_t offset = 0;
            for (int i : fused_inputs) {
              const Tensor& in = c.input(i);
              if (in.NumElements() > 0) std::memcpy(base + offset * element, in.raw_data(), in.TotalBytes());
              offset += in.NumElements();
            }
            comm.AllReduceSum(dtype, base, fused_total);
            offset = 0;
            for (int i : fused_inputs) {
              const int64_t count = c.input(i).NumElements();
              c.set_output(i, fused.Slice(offset, offset + count).Reshaped(c.input(i).shape()));
              offset += count;
            }
          },
      .no_gradient = "a collective over ranks applied to gradients; not differentiable",
  };
  return op;
}

const OpDef& ReplicaScaleOp() {
  static const OpDef op = {
      .name = "LoomReplicaScale",
      .num_inputs = 0,
      .stateful = true,  // depends on the Session's communicator
      .attrs = {kDType.Required()},
      .shape =
          [](InferenceContext& c) {
            const DType dtype = c.attr(kDType);
            if (dtype != kFloat32 && dtype != kFloat64) c.Fail("dtype must be float32 or float64");
            c.set_output(0, dtype, Shape{});
          },
      .kernel =
          [](KernelContext& c) {
            const double scale = 1.0 / RequireCommunicator(c).size();
            c.set_output(0, c.node().output_dtype(0) == kFloat32
                                ? Tensor::Scalar<float>(static_cast<float>(scale))
                                : Tensor::Scalar<double>(scale));
          },
      .no_gradient = "a constant of the job (1 / number of ranks)",
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
      .num_outputs = 2,
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

std::vector<Output> AllReduceSum(const Scope& scope, const std::vector<Output>& inputs) {
  LOOM_CHECK(!inputs.empty()) << "AllReduceSum: no inputs";
  Node* node = scope.AddNode(AllReduceSumOp(), inputs, {}, "AllReduceSum");
  std::vector<Output> outputs;
  for (int i = 0; i < node->num_outputs(); ++i) outputs.push_back(node->output(i));
  return outputs;
}

Output ReplicaScale(const Scope& scope, DType dtype) {
  return scope.AddNode(ReplicaScaleOp(), {}, {kDType(dtype)}, "ReplicaScale")->output(0);
}

std::pair<Output, Output> AllGatherRows(const Scope& scope, Output indices, Output values) {
  Node* node = scope.AddNode(AllGatherRowsOp(), {indices, values}, {}, "AllGatherRows");
  return {node->output(0), node->output(1)};
}

void RegisterDistributeOps(OpRegistry& registry) {
  registry.Register(AllReduceSumOp());
  registry.Register(ReplicaScaleOp());
  registry.Register(AllGatherRowsOp());
}

}  // namespace loom::distribute
