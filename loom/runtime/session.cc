#include "loom/runtime/session.h"

#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "loom/graph/op_def.h"
#include "loom/ops/blas.h"
#include "loom/runtime/graph_fusion.h"
#include "loom/runtime/region_executor.h"
#include "loom/runtime/session_plan.h"

namespace loom {
namespace {

int64_t NowMicros() {
  timeval tv;
  gettimeofday(&tv, nullptr);
  return static_cast<int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec;
}

int ResolveThreads(int requested) {
  return requested > 0 ? requested : ThreadPool::DefaultThreadCount();
}

}  // namespace

// Debug and sanitizer builds check every kernel output against the shape rule's inference
// (tests/op_sweep_test.cc checks every op once in every build).
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kCheckKernelShapes = true;
#else
constexpr bool kCheckKernelShapes = false;
#endif

namespace {

// Variables are read when their reader runs, not when the Variable node would, so a
// reader under a control dependency on an update sees the updated value (TF1's
// `with tf.control_dependencies([update]): tf.identity(v)`).
Tensor ReadVariableAtStep(ResourceMgr& resources, const VariableRead& read) {
  VariableResource* var = read.resource.load(std::memory_order_acquire);
  if (var == nullptr) {
    var = resources.Lookup<VariableResource>(read.node->name());
    if (var != nullptr) read.resource.store(var, std::memory_order_release);
  }
  Tensor value = var != nullptr ? var->Read() : Tensor();
  if (!value.defined()) {
    throw FailedPrecondition("attempting to use uninitialized variable '", read.node->name(),
                             "': run GlobalVariablesInitializer() or restore a checkpoint first");
  }
  return value;
}

// Fills `inputs` for `step`: slot values (moved out on their last read) and variables
// read now.
inline void GatherInputs(const Step& step, ResourceMgr& resources, std::vector<Tensor>& slots,
                         std::vector<Tensor>& inputs) {
  const size_t num_inputs = step.input_slots.size();
  inputs.resize(num_inputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    int slot = step.input_slots[i];
    if (slot < 0) {
      inputs[i] = step.input_variables[i] ? ReadVariableAtStep(resources, *step.input_variables[i])
                                          : Tensor();
    } else if (step.input_moves[i]) {
      inputs[i] = std::move(slots[slot]);
    } else {
      inputs[i] = slots[slot];
    }
  }
}

// What runs a step's kernel in one Session::Run.
struct StepRunner {
  ThreadPool& pool;
  ResourceMgr& resources;
  int64_t step_id;
  RunMetadata* trace;  // nullptr: no tracing

  inline void Run(const Step& step, std::vector<Tensor>& inputs,
                  std::vector<Tensor>& outputs) const {
    outputs.assign(step.num_outputs, Tensor());
    KernelContext ctx(*step.node, std::span<Tensor>(inputs.data(), inputs.size()), outputs, pool,
                      resources, step_id);
    const int64_t start = trace != nullptr ? NowMicros() : 0;
    try {
      (*step.kernel)(ctx);
    } catch (const Error& e) {
      // Kernel errors that name their node say so (Error::node); the others get it here.
      const std::string& name = step.node->name();
      if (step.fused != nullptr) {
        const std::string in =
            e.node().empty() ? StrCat(" [in ", step.node->description(), "]") : "";
        throw Error(e.code(),
                    StrCat(e.message(), in, " (run as one fused kernel: ", step.fused->name,
                           "; SessionOptions::fuse_ops = false runs them one by one)"))
            .AtNode(e.node().empty() ? name : e.node());
      }
      if (e.node() == name) throw;
      throw Error(e.code(), StrCat(e.message(), " [in ", step.node->description(), "]"))
          .AtNode(name);
    }
    if (trace != nullptr) {
      if (step.fused != nullptr) {
        trace->step_stats.push_back({step.fused->name, step.fused->op, start, NowMicros()});
      } else {
        trace->step_stats.push_back({step.node->name(), step.node->op(), start, NowMicros()});
      }
    }
  }
};

// Checks the kernel's outputs and moves them into their slots. With `dead_from` (a plan
// with a Switch), an output a Switch left without a value is dead.
inline void StoreOutputs(const Step& step, std::vector<Tensor>& outputs, std::vector<Tensor>& slots,
                         std::vector<int>* dead_from) {
  for (int o = 0; o < step.num_outputs; ++o) {
    Tensor& t = outputs[o];
    if (dead_from != nullptr && !t.defined() && step.node->op_def().role == OpRole::kSwitch) {
      (*dead_from)[step.first_output_slot + o] = step.node->id();
      continue;
    }
    // A fused step's output o is a part's output (graph_fusion.h).
    const Output out =
        step.fused == nullptr ? Output(const_cast<Node*>(step.node), o) : step.fused->outputs[o];
    if (!t.defined() || t.dtype() != out.dtype()) {
      throw Internal(out.node->description(), " produced ",
                     t.defined() ? DTypeName(t.dtype()) : "no value", " for output ", out.index,
                     ", expected ", DTypeName(out.dtype()));
    }
    if (kCheckKernelShapes && !out.shape().IsCompatibleWith(t.shape())) {
      throw Internal(out.node->description(), " produced shape ", t.shape(), " for output ",
                     out.index, ", but its shape rule inferred ", out.shape(),
                     "; the op's shape rule and kernel disagree");
    }
    slots[OutputSlot(step, o)] = std::move(t);
  }
}

// Why `step` does not run: the id of the Switch behind a dead input or control input, or
// -1 when it runs. A Merge runs when any data input is live (its control inputs do not
// kill it, as in TF's executor).
int DeadCause(const Step& step, const std::vector<int>& dead_from,
              const std::vector<int>& step_dead) {
  const bool merge = step.node->op_def().role == OpRole::kMerge;
  int cause = -1;
  for (int slot : step.input_slots) {
    if (slot < 0) continue;  // a variable or ref input: never dead
    if (dead_from[slot] < 0) {
      if (merge) return -1;
    } else if (cause < 0) {
      cause = dead_from[slot];
    }
  }
  if (merge) return cause;  // every input dead (a Merge has at least one)
  if (cause >= 0) return cause;
  for (int c : step.control_steps) {
    if (step_dead[c] >= 0) return step_dead[c];
  }
  return -1;
}

// The vectors a Run works in (value slots, one step's inputs and outputs), kept by the
// thread between Runs so that a Run allocates none of them: their capacity stays, their
// tensors are released when the Run ends (or throws). A stack per thread: a Run started
// inside another one's kernel takes its own.
struct RunScratch {
  std::vector<Tensor> slots, inputs, outputs;
};

class RunScratchLease {
 public:
  explicit RunScratchLease(int num_slots) {
    auto& free = FreeList();
    if (free.empty()) {
      scratch_ = std::make_unique<RunScratch>();
    } else {
      scratch_ = std::move(free.back());
      free.pop_back();
    }
    scratch_->slots.resize(num_slots);
  }
  ~RunScratchLease() {
    scratch_->slots.clear();
    scratch_->inputs.clear();
    scratch_->outputs.clear();
    FreeList().push_back(std::move(scratch_));
  }
  RunScratchLease(const RunScratchLease&) = delete;
  RunScratchLease& operator=(const RunScratchLease&) = delete;
  RunScratch& operator*() const { return *scratch_; }

 private:
  static std::vector<std::unique_ptr<RunScratch>>& FreeList() {
    thread_local std::vector<std::unique_ptr<RunScratch>> free;
    return free;
  }
  std::unique_ptr<RunScratch> scratch_;
};

}  // namespace

Session::Session(Graph& graph, SessionOptions options)
    : graph_(graph), options_(options), pool_(ResolveThreads(options.intra_op_threads)) {}

Session::~Session() = default;

std::vector<Tensor> Session::Run(const FeedList& feeds, const std::vector<Output>& fetches,
                                 const std::vector<Operation>& targets, const RunOptions* options,
                                 RunMetadata* metadata) {
  for (const Output& f : fetches) {
    if (!f.valid()) throw InvalidArgument("Session::Run: a fetch is an empty Output");
    if (f.node->graph() != &graph_) {
      throw InvalidArgument("Session::Run: fetch ", f.name(), " belongs to another graph");
    }
  }
  for (const Operation& t : targets) {
    if (!t.valid()) throw InvalidArgument("Session::Run: a target is an empty Operation");
    if (t.node->graph() != &graph_) {
      throw InvalidArgument("Session::Run: target '", t.name(), "' belongs to another graph");
    }
  }
  for (size_t i = 0; i < feeds.size(); ++i) {
    const auto& [out, value] = feeds[i];
    if (!out.valid() || out.node->graph() != &graph_) {
      throw InvalidArgument("Session::Run: feed ", i, " is empty or from another graph");
    }
    for (size_t j = 0; j < i; ++j) {
      if (feeds[j].first == out)
        throw InvalidArgument("Session::Run: ", out.name(), " is fed twice");
    }
    if (!value.defined())
      throw InvalidArgument("Session::Run: the value fed to ", out.name(), " is empty");
    if (value.dtype() != out.dtype()) {
      throw InvalidArgument("cannot feed a ", DTypeName(value.dtype()), " tensor to ",
                            out.node->description(), ", which expects ", DTypeName(out.dtype()));
    }
    if (!value.shape().IsCompatibleWith(out.shape())) {
      throw InvalidArgument("cannot feed a tensor of shape ", value.shape(), " to ",
                            out.node->description(), ", which expects shape ", out.shape());
    }
  }

  const Plan& plan = GetPlan(feeds, fetches, targets);
  const int64_t step_id = run_counter_++;
  SetBlasThreads(pool_.num_threads());
  const bool trace = options != nullptr && options->trace && metadata != nullptr;
  const RunScratchLease scratch(plan.num_slots);
  std::vector<Tensor>& slots = (*scratch).slots;
  std::vector<Tensor>& inputs = (*scratch).inputs;
  std::vector<Tensor>& outputs = (*scratch).outputs;
  for (size_t i = 0; i < feeds.size(); ++i) slots[plan.feed_slots[i]] = feeds[i].second;

  const StepRunner runner{pool_, resources_, step_id, trace ? metadata : nullptr};
  // Per slot, the id of the Switch whose untaken output the value descends from (the value
  // is dead), or -1 (live); filled only when the plan has a Switch.
  std::vector<int> dead_from;
  if (!plan.has_switch) {
    for (const Step& step : plan.steps) {
      GatherInputs(step, resources_, slots, inputs);
      runner.Run(step, inputs, outputs);
      StoreOutputs(step, outputs, slots, nullptr);
      for (auto& t : inputs) t = Tensor();
    }
  } else {
    dead_from.assign(plan.num_slots, -1);
    std::vector<int> step_dead(plan.steps.size(), -1);
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      const Step& step = plan.steps[s];
      const int dead = DeadCause(step, dead_from, step_dead);
      if (dead >= 0) {
        // Not run: its outputs are dead too; values it was the last reader of go now.
        step_dead[s] = dead;
        for (int o = 0; o < step.num_outputs; ++o) dead_from[step.first_output_slot + o] = dead;
        for (size_t i = 0; i < step.input_slots.size(); ++i) {
          if (step.input_moves[i]) slots[step.input_slots[i]] = Tensor();
        }
        continue;
      }
      GatherInputs(step, resources_, slots, inputs);
      // A Merge sees its dead inputs as undefined tensors.
      for (size_t i = 0; i < step.input_slots.size(); ++i) {
        if (step.input_slots[i] >= 0 && dead_from[step.input_slots[i]] >= 0) inputs[i] = Tensor();
      }
      runner.Run(step, inputs, outputs);
      StoreOutputs(step, outputs, slots, &dead_from);
      for (auto& t : inputs) t = Tensor();
    }
  }
  std::vector<Tensor> result;
  result.reserve(plan.fetch_slots.size());
  for (size_t f = 0; f < plan.fetch_slots.size(); ++f) {
    const int slot = plan.fetch_slots[f];
    if (!dead_from.empty() && dead_from[slot] >= 0) {
      throw InvalidArgument("fetch ", fetches[f].name(), " has no value in this run: it is on the ",
                            "untaken side of ", graph_.node(dead_from[slot])->description(),
                            " (a cond branch that its predicate did not choose). Fetch the "
                            "cond's result (its Merge) instead, or run the op as a target");
    }
    if (plan.fetch_variables[f])
      slots[slot] = ReadVariableAtStep(resources_, *plan.fetch_variables[f]);
    // A fetched value that something else still views (a variable, a feed) is copied, so
    // later in-place updates never change what the caller holds.
    Tensor& t = slots[slot];
    result.push_back(t.BufferIsUnique() || t.dtype() == DType::kString ? t : t.Clone());
  }
  return result;
}

Tensor Session::Eval(Output fetch, const FeedList& feeds) { return Run(feeds, {fetch})[0]; }

void Session::RunTarget(Operation target, const FeedList& feeds) { Run(feeds, {}, {target}); }

Tensor Session::ReadVariable(const std::string& name) {
  auto* var = resources_.Lookup<VariableResource>(name);
  Tensor value = var != nullptr ? var->Read() : Tensor();
  if (!value.defined()) throw FailedPrecondition("variable '", name, "' is not initialized");
  return value.Clone();
}

void Session::WriteVariable(const std::string& name, const Tensor& value) {
  Node* node = graph_.FindNode(name);
  if (node == nullptr || node->op_def().role != OpRole::kVariable) {
    throw NotFound("no variable named '", name, "' in the graph");
  }
  if (value.dtype() != node->output_dtype(0) ||
      !value.shape().IsCompatibleWith(node->output_shape(0))) {
    throw InvalidArgument("cannot assign a ", DTypeName(value.dtype()), value.shape(),
                          " value to variable '", name, "' of ", DTypeName(node->output_dtype(0)),
                          node->output_shape(0));
  }
  auto* var = resources_.LookupOrCreate<VariableResource>(name);
  var->Write(value.Clone());
}

bool Session::VariableInitialized(const std::string& name) {
  auto* var = resources_.Lookup<VariableResource>(name);
  return var != nullptr && var->Read().defined();
}

}  // namespace loom
