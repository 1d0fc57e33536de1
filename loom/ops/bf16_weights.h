#ifndef LOOM_OPS_BF16_WEIGHTS_H_
#define LOOM_OPS_BF16_WEIGHTS_H_

// The bf16 copies of variables that bf16 products read. Internal to the ops layer.
//
// A bf16 product rounds both operands to bf16 on every call (onednn_matmul.h), though a
// weight only changes when something writes its variable: a training step reads each
// weight twice (x W and dy W^T) before the update, and Predict reads unchanged weights on
// every call. So when a product's operand is a variable's current value, its bf16 bits
// are made once per version of the variable (VariableResource::version) and kept in the
// Session's resources. One copy serves both uses: it holds the stored matrix, and the
// transposes are strides.
//
// Why a stale copy cannot be read:
//   - the operand counts as the variable's value only when, holding the variable's lock,
//     its buffer and extent are the variable's current ones; the version is read then;
//   - the operand holds a reference to that buffer, so a writer in place copies it first
//     (VariableResource::MutableValue): the buffer the operand views never changes;
//   - every write bumps the version, and a version is never reused, so a copy made for
//     (variable, version) matches the values the operand views.
// Anything else (an operand computed from the variable, a Switch between them, a view of
// part of it, a variable written since it was read) is a miss, and the caller converts.
//
// An optimizer's dense update makes the new copy as it goes (UpdatedBits): each chunk of
// the new values is converted right after its update, while it is in cache, so a weight
// that bf16 products read costs no conversion pass of its own in a training step.
//
// Memory: one copy per variable that a bf16 product reads (half the variable's size),
// replaced on the next version, freed with the Session. Nothing is kept for float32 runs.
// Thread-safety: thread-safe; two products may read one weight at once.
#include <cstdint>
#include <memory>

#include "loom/graph/op_def.h"
#include "loom/graph/resource.h"
#include "loom/ops/onednn_matmul.h"
#include "loom/tensor/tensor.h"

namespace loom::bf16 {

// The bf16 bits (bf16::FloatToBf16, as uint16 values in a kUInt8 tensor of 2 bytes per
// element) of kernel input `input` when it is a float32 variable's current value, its
// producer a Variable node (directly or through Identity nodes, as TF's `read` ops);
// made on the first call for the variable's version and shared after, and with a place
// for oneDNN's own layouts of them once that version has served several products (see
// WeightLayouts). None when the input is anything else. The bits are never written.
struct OperandCopy {
  Tensor bits;                             // undefined: no copy
  std::shared_ptr<WeightLayouts> layouts;  // null until the copy is worth re-laying out
};
OperandCopy VariableBits(const KernelContext& c, int input);

class VariableBitsCache;

// The copy of a variable's value being updated in place, made by the update itself.
// Wanted only for a float32 variable that bf16 products read (the Session's cache holds a
// copy of an earlier version of it); otherwise wanted() is false and nothing is made.
//
//   bf16::UpdatedBits bits(c.resources(), var);   // after var.MutableValue(), lock held
//   ... per chunk [b, e), after updating it: if (bits.wanted()) bits.Convert(values, b, e);
//   if (bits.wanted()) bits.Publish();               // every element converted, lock held
class UpdatedBits {
 public:
  // REQUIRES: var.mu() held from here to Publish, and var's update begun (MutableValue),
  // so var.version() is the updated value's. (The caller holds the lock through a
  // LockedRefs, beyond clang's analysis, so the constructor opts out of it.)
  UpdatedBits(ResourceMgr& resources, const VariableResource& var) LOOM_NO_THREAD_SAFETY_ANALYSIS;
  bool wanted() const { return bits_.defined(); }
  // Converts elements [begin, end) of the updated value, `values` its first element.
  // Thread-safe for disjoint ranges.
  void Convert(const float* values, int64_t begin, int64_t end);
  // Keeps the bits as the copy of the updated value. REQUIRES: wanted(), every element
  // converted, the lock still held.
  void Publish();

 private:
  VariableBitsCache* cache_ = nullptr;
  const VariableResource* var_ = nullptr;
  uint64_t version_ = 0;
  Tensor bits_;
};

// The bf16 bits of kernel input `input` of a bf16 MatMul, when a copy can serve more
// than one product: a variable's current value (VariableBits); or an intermediate value
// that two or more bf16 MatMuls of the graph read (an activation read by x W and by the
// filter gradient x^T dy, a gradient read by dy W^T and x^T dy), converted by the first
// of them to run in a step and reused by the others in that step. Undefined otherwise
// (the caller converts).
//
// Why an intermediate value's copy is current: the Session's step cache holds the value
// itself (a reference to its buffer) beside the copy, so the buffer is neither freed
// (its address cannot name another value) nor written in place (every in-place writer
// requires a buffer nothing else holds: KernelContext::ForwardInputOrAllocate,
// VariableResource::MutableValue). A copy is used only within the step that made it, and
// only owned buffers are kept (an unowned one wraps memory Loom does not control, such as
// a fed array). The cost: the values of one step read by two products stay alive until
// the next step's first copy, with their copies: at most 64 of them and 256 MiB (the
// oldest go first, as in a long while loop, whose iterations share a step).
OperandCopy OperandBits(const KernelContext& c, int input);

// How many copies the Session's caches have made and reused (for tests and benchmarks).
struct VariableBitsCounts {
  int64_t made = 0;     // by a product's conversion
  int64_t updated = 0;  // by an update (UpdatedBits)
  int64_t reused = 0;
  int64_t relaid = 0;     // copies given a place for oneDNN's layouts (WeightLayouts)
  int64_t step_made = 0;  // of intermediate values (OperandBits)
  int64_t step_reused = 0;
};
VariableBitsCounts CountVariableBits(ResourceMgr& resources);

}  // namespace loom::bf16

#endif  // LOOM_OPS_BF16_WEIGHTS_H_
