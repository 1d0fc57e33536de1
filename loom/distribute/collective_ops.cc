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
      .output_dtypes = {DTypeRule::SameAsEachInput()},
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
              if (out.raw_data() != in.raw_data())
                std::memcpy(out.raw_data(), in.raw_data(), in.TotalBytes());
              comm.AllReduceSum(dtype, out.raw_data(), out.NumElements());
              c.set_output(i, out);
            }
            if (fused_inputs.empty()) return;
            Tensor fused = FusionBuffer(c, dtype, fused_total);
            char* base = static_cast<char*>(fused.raw_data());
            int64_t offset = 0;
            for (int i : fused_inputs) {
              const Tensor& in = c.input(i);
              if (in.NumElements() > 0)
                std::memcpy(base + offset * element, in.raw_data(), in.TotalBytes());
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

// What an all-reduce started by LoomAllReduceStart holds until its LoomAllReduceWait:
// the buffer being reduced (the fusion buffer, or the bucket's one input reduced in
// place) and the bucket's shapes. Kept in the Session under the start node's name, so
// the buffer outlives the step's slots while the communication thread writes it.
class PendingAllReduce : public Resource {
 public:
  ~PendingAllReduce() override {
    if (ticket == 0) return;
    try {
      comm->Wait(ticket);  // the communication thread must not write freed memory
    } catch (...) {
    }
  }
  std::shared_ptr<Communicator> comm;
  int64_t ticket = 0;          // 0: nothing in flight
  Tensor buffer;               // the values being summed, flat
  std::vector<Tensor> inputs;  // one rank: the inputs, passed through
  std::vector<Shape> shapes;   // the bucket's shapes, in input order
};

std::string PendingName(const Node& start) {
  return StrCat("loom.distribute/pending:", start.name());
}

template <typename T>
void CopyScaled(T* dst, const T* src, int64_t count, T scale) {
  for (int64_t i = 0; i < count; ++i) dst[i] = src[i] * scale;
}

// Copies `in` into dst, times `scale` when given (the same product Mul computes).
void CopyInto(char* dst, const Tensor& in, const Tensor* scale) {
  if (in.NumElements() == 0) return;
  if (scale == nullptr) {
    std::memcpy(dst, in.raw_data(), in.TotalBytes());
  } else if (in.dtype() == kFloat32) {
    CopyScaled(reinterpret_cast<float*>(dst), in.data<float>(), in.NumElements(),
               *scale->data<float>());
  } else {
    CopyScaled(reinterpret_cast<double*>(dst), in.data<double>(), in.NumElements(),
               *scale->data<double>());
  }
}

// LoomAllReduceStart(g_1..g_n[, scale]) -> ticket: fills the bucket's buffer and hands
// it to the communicator's thread (Communicator::StartAllReduceSum); returns at once.
// Built with `_schedule_early`: the Session runs it as soon as the bucket's gradients
// exist, so the rest of the backward pass runs while the buffer is reduced.
// True: the last input is a scalar the gradients are multiplied by before the sum.
inline constexpr Attr<bool> kScaled{"scaled"};

const OpDef& AllReduceStartOp() {
  static const OpDef op = {
      .name = "LoomAllReduceStart",
      .num_inputs = kVariadic,
      .stateful = true,
      .attrs = {kScaled.Default(false)},
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            const int n = c.num_inputs() - (c.attr(kScaled) ? 1 : 0);
            if (n <= 0) c.Fail("needs at least one gradient");
            c.ExpectDType(0, {kFloat32, kFloat64});
            for (int i = 0; i < c.num_inputs(); ++i) c.ExpectSameDType(0, i);
            if (n < c.num_inputs()) c.ExpectRank(n, 0);
            c.set_output(0, kInt64, Shape{});
          },
      .kernel =
          [](KernelContext& c) {
            Communicator& comm = RequireCommunicator(c);
            auto* pending = c.resources().LookupOrCreate<PendingAllReduce>(PendingName(c.node()));
            if (pending->ticket != 0) {  // an earlier step failed before its wait
              pending->comm->Wait(pending->ticket);
              pending->ticket = 0;
            }
            pending->comm = AttachedCommunicator(c.resources());
            const bool scaled = c.attr(kScaled);
            const int n = c.num_inputs() - (scaled ? 1 : 0);
            const Tensor* scale = scaled ? &c.input(n) : nullptr;
            pending->shapes.clear();
            pending->inputs.clear();
            for (int i = 0; i < n; ++i) pending->shapes.push_back(c.input(i).shape());
            c.set_output(0, Tensor::Scalar<int64_t>(0));
            if (comm.size() == 1 && !scaled) {  // the sum over one rank is the value
              for (int i = 0; i < n; ++i) pending->inputs.push_back(c.input(i));
              return;
            }
            const DType dtype = c.input(0).dtype();
            const Tensor& first = c.input(0);
            if (n == 1 && static_cast<int64_t>(first.TotalBytes()) >= kInPlaceBytes &&
                first.BufferIsUnique() && first.buffer()->owned() && first.byte_offset() == 0) {
              // The gradient is consumed by nothing else: reduce it where it is.
              pending->buffer = first.Reshaped(Shape{first.NumElements()});
              if (scale != nullptr) {
                CopyInto(static_cast<char*>(pending->buffer.raw_data()), first, scale);
              }
            } else {
              int64_t total = 0;
              for (int i = 0; i < n; ++i) total += c.input(i).NumElements();
              pending->buffer = FusionBuffer(c, dtype, total);
              char* base = static_cast<char*>(pending->buffer.raw_data());
              for (int i = 0; i < n; ++i) {
                CopyInto(base, c.input(i), scale);
                base += c.input(i).TotalBytes();
              }
            }
            if (comm.size() == 1) return;  // scaled, one rank: nothing to sum
            pending->ticket = comm.StartAllReduceSum(dtype, pending->buffer.raw_data(),
                                                     pending->buffer.NumElements());
            c.set_output(0, Tensor::Scalar<int64_t>(pending->ticket));
          },
      .no_gradient = "a collective over ranks applied to gradients; not differentiable",
  };
  return op;
}

// LoomAllReduceWait(ticket) -> sum_1..sum_n: waits for its start's all-reduce and
// returns the bucket's sums as views of the reduced buffer.
const OpDef& AllReduceWaitOp() {
  static const OpDef op = {
      .name = "LoomAllReduceWait",
      .num_inputs = 1,
      .stateful = true,
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::ByShapeRule(
          "output i has the dtype of input i of the LoomAllReduceStart it waits for")},
      .shape =
          [](InferenceContext& c) {
            const Node* start = c.input(0).node;
            if (start->op() != "LoomAllReduceStart") {
              c.Fail("input must be a LoomAllReduceStart, not ", start->description());
            }
            const int n = start->num_inputs() - (start->attr(kScaled) ? 1 : 0);
            for (int i = 0; i < n; ++i) {
              c.set_output(i, start->input(i).dtype(), start->input(i).shape());
            }
          },
      .kernel =
          [](KernelContext& c) {
            const Node& start = *c.node().input(0).node;
            auto* pending = c.resources().Lookup<PendingAllReduce>(PendingName(start));
            if (pending == nullptr) {
              throw FailedPrecondition(c.node().description(), ": its all-reduce ",
                                       start.description(), " has not run in this Session");
            }
            if (pending->ticket != 0) {
              pending->comm->Wait(pending->ticket);
              pending->ticket = 0;
            }
            if (!pending->inputs.empty()) {
              for (size_t i = 0; i < pending->inputs.size(); ++i)
                c.set_output(i, pending->inputs[i]);
              pending->inputs.clear();
              return;
            }
            int64_t offset = 0;
            for (size_t i = 0; i < pending->shapes.size(); ++i) {
              const int64_t count = pending->shapes[i].num_elements();
              c.set_output(
                  i, pending->buffer.Slice(offset, offset + count).Reshaped(pending->shapes[i]));
              offset += count;
            }
            pending->buffer = Tensor();  // the outputs keep it; the next step may reuse it
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
      .output_dtypes = {DTypeRule::FromAttr(kDType)},
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
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::SameAsInput(1)},
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
                                      values.shape(),
                                      " or index dtype; every rank must run "
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
  outputs.reserve(node->num_outputs());
  for (int i = 0; i < node->num_outputs(); ++i) outputs.push_back(node->output(i));
  return outputs;
}

std::vector<Output> StartAndWaitAllReduceSum(const Scope& scope, const std::vector<Output>& inputs,
                                             Output scale) {
  LOOM_CHECK(!inputs.empty()) << "StartAndWaitAllReduceSum: no inputs";
  std::vector<Output> start_inputs = inputs;
  if (scale.valid()) start_inputs.push_back(scale);
  // `_schedule_early`: the Session runs the start right after its inputs (session_plan.cc).
  Node* start =
      scope.AddNode(AllReduceStartOp(), start_inputs,
                    {kScaled(scale.valid()), {"_schedule_early", true}}, "AllReduceStart");
  Node* wait = scope.AddNode(AllReduceWaitOp(), {start->output(0)}, {}, "AllReduceWait");
  std::vector<Output> outputs;
  outputs.reserve(wait->num_outputs());
  for (int i = 0; i < wait->num_outputs(); ++i) outputs.push_back(wait->output(i));
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
  registry.Register(AllReduceStartOp());
  registry.Register(AllReduceWaitOp());
  registry.Register(ReplicaScaleOp());
  registry.Register(AllGatherRowsOp());
}

}  // namespace loom::distribute
