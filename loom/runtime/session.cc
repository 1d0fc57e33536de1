#include "loom/runtime/session.h"

#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>

#include "loom/graph/op_def.h"
#include "loom/ops/blas.h"
#include "loom/runtime/graph_fusion.h"
#include "loom/runtime/region_executor.h"

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

// A variable a plan reads, with its resource once found: the ResourceMgr never removes a
// resource (graph/resource.h), so the pointer stays valid for the Session's lifetime, and
// later reads skip the manager's lock and name lookup. Found on the first read that sees
// the variable (it may be created after the plan, by an initializer or a restore).
struct VariableRead {
  explicit VariableRead(const Node* n) : node(n) {}
  const Node* node;
  mutable std::atomic<VariableResource*> resource{nullptr};
};

// One kernel invocation in a plan.
struct Step {
  const Node* node;
  const KernelFn* kernel;
  std::vector<int> input_slots;                      // -1 for ref inputs and variable reads
  std::vector<const VariableRead*> input_variables;  // the variable read at this step, or nullptr
  std::vector<char> input_moves;                     // 1 when this step is the slot's last reader
  int first_output_slot;
  int num_outputs;
  // Filled only in a plan with a Switch (Plan::has_switch): the steps of this node's
  // control inputs (a control input that is no step, a variable or a fed node, is live).
  std::vector<int> control_steps;
  // A fused chain's step (graph_fusion.h): `node` is its kernel's node, and its outputs go
  // to these slots (the parts' outputs, not contiguous). nullptr for a node's own step.
  const FusedGroup* fused = nullptr;
  std::vector<int> output_slots;
};

inline int OutputSlot(const Step& step, int o) {
  return step.fused == nullptr ? step.first_output_slot + o : step.output_slots[o];
}

struct Session::Plan {
  std::vector<Step> steps;
  // A Switch among the steps: the run tracks dead values (RunWithDeadness). Without one no
  // value can be dead, and the plain loop runs.
  bool has_switch = false;
  int num_slots = 0;
  std::vector<int> feed_slots;
  std::vector<int> fetch_slots;
  std::vector<const VariableRead*> fetch_variables;  // per fetch: a variable read at the end
  std::deque<VariableRead> variable_reads;  // what input_variables and fetch_variables point to
  FusionPlan fusion;                        // what fused steps point to
};

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

std::unique_ptr<Session::Plan> Session::BuildPlan(const FeedList& feeds,
                                                  const std::vector<Output>& fetches,
                                                  const std::vector<Operation>& targets) const {
  const int n = graph_.num_nodes();
  std::vector<char> fed_node(n, 0);
  for (const auto& [out, value] : feeds) fed_node[out.node->id()] = 1;

  // Reverse reachability from fetches and targets; fed nodes are sources.
  std::vector<char> needed(n, 0);
  std::vector<Node*> stack;
  auto want = [&](Node* node) {
    if (!needed[node->id()]) {
      needed[node->id()] = 1;
      stack.push_back(node);
    }
  };
  for (const Output& f : fetches) want(f.node);
  for (const Operation& t : targets) want(t.node);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (fed_node[node->id()]) continue;
    const auto& refs = node->op_def().ref_inputs;
    for (int i = 0; i < node->num_inputs(); ++i) {
      if (std::find(refs.begin(), refs.end(), i) != refs.end()) continue;
      want(node->input(i).node);
    }
    for (Node* c : node->control_inputs()) want(c);
  }

  auto plan = std::make_unique<Plan>();
  if (options_.fuse_ops) plan->fusion = PlanFusion(graph_, needed, fed_node, fetches);
  const FusionPlan& fusion = plan->fusion;
  std::vector<int> slot_base(n, -1);
  for (int id = 0; id < n; ++id) {
    if (!needed[id]) continue;
    slot_base[id] = plan->num_slots;
    plan->num_slots += graph_.node(id)->num_outputs();
  }
  for (const auto& [out, value] : feeds) {
    if (out.index >= out.node->num_outputs()) throw InvalidArgument("bad feed ", out.name());
    if (slot_base[out.node->id()] < 0) {  // fed but not needed: still give it a slot
      slot_base[out.node->id()] = plan->num_slots;
      plan->num_slots += out.node->num_outputs();
    }
    plan->feed_slots.push_back(slot_base[out.node->id()] + out.index);
  }
  // Kernels run in node order (a topological order: inputs precede their consumers),
  // except that a node with the attribute `_schedule_early` (true) moves up to right
  // after the last of its inputs and control inputs; its consumers follow its old place,
  // so the order stays topological. It is for an op that starts work on another thread
  // (a collective's start, distribute/collective_ops.h): the kernels that node order puts
  // before it run while that work does.
  std::vector<int> order;
  std::vector<int> position(n, -1);
  for (int id = 0; id < n; ++id) {
    if (!needed[id] || fed_node[id] || IsVariable(graph_.node(id))) continue;
    const Node* node = graph_.node(id);
    size_t at = order.size();
    if (const bool* early = node->attrs().Find<bool>(kScheduleEarlyAttr); early && *early) {
      int after = -1;
      for (int i = 0; i < node->num_inputs(); ++i)
        after = std::max(after, position[node->input(i).node->id()]);
      for (const Node* c : node->control_inputs()) after = std::max(after, position[c->id()]);
      at = after < 0 ? 0 : static_cast<size_t>(after) + 1;
    }
    order.insert(order.begin() + at, id);
    for (size_t p = at; p < order.size(); ++p) position[order[p]] = static_cast<int>(p);
  }
  std::vector<int> last_reader(plan->num_slots, -1);
  std::vector<int> step_of(n, -1);
  for (int id : order) {
    Node* node = graph_.node(id);
    const int group = fusion.group_of.empty() ? -1 : fusion.group_of[id];
    // A fused chain's step takes the place of its node `run_at`; its other nodes have none.
    if (group >= 0 && fusion.groups[group].run_at != id) continue;
    step_of[id] = static_cast<int>(plan->steps.size());
    plan->has_switch |= node->op_def().role == OpRole::kSwitch;
    if (!node->op_def().kernel) {
      throw Unimplemented(node->description(), " has no CPU kernel");
    }
    Step step;
    step.node = node;
    step.kernel = &node->op_def().kernel;
    step.first_output_slot = slot_base[id];
    step.num_outputs = node->num_outputs();
    std::vector<Output> inputs;  // what the step reads (a ReluGrad may read a Relu's output)
    inputs.reserve(node->num_inputs());
    for (int i = 0; i < node->num_inputs(); ++i) inputs.push_back(fusion.Input(node, i));
    if (group >= 0) {
      const FusedGroup& g = fusion.groups[group];
      step.fused = &g;
      step.node = g.kernel_node;
      step.kernel = &g.kernel;
      step.num_outputs = static_cast<int>(g.outputs.size());
      for (const Output& o : g.outputs)
        step.output_slots.push_back(slot_base[o.node->id()] + o.index);
      inputs = g.inputs;
    }
    const auto& refs = step.node->op_def().ref_inputs;
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
      const Output& in = inputs[i];
      step.input_variables.push_back(nullptr);
      if (step.fused == nullptr && std::find(refs.begin(), refs.end(), i) != refs.end()) {
        step.input_slots.push_back(-1);
      } else if (IsVariable(in.node) && !fed_node[in.node->id()]) {
        step.input_slots.push_back(-1);
        step.input_variables.back() = &plan->variable_reads.emplace_back(in.node);
      } else {
        int slot = slot_base[in.node->id()] + in.index;
        step.input_slots.push_back(slot);
        last_reader[slot] = static_cast<int>(plan->steps.size());
      }
    }
    step.input_moves.assign(step.input_slots.size(), 0);
    plan->steps.push_back(std::move(step));
  }
  if (plan->has_switch) {
    for (Step& step : plan->steps) {
      for (const Node* c : step.node->control_inputs()) {
        if (step_of[c->id()] >= 0) step.control_steps.push_back(step_of[c->id()]);
      }
    }
  }
  for (const Output& f : fetches) {
    int slot = slot_base[f.node->id()] + f.index;
    plan->fetch_slots.push_back(slot);
    plan->fetch_variables.push_back(IsVariable(f.node) && !fed_node[f.node->id()]
                                        ? &plan->variable_reads.emplace_back(f.node)
                                        : nullptr);
    last_reader[slot] = -2;  // fetched: never moved out
  }
  for (int s = 0; s < static_cast<int>(plan->steps.size()); ++s) {
    Step& step = plan->steps[s];
    for (size_t i = 0; i < step.input_slots.size(); ++i) {
      int slot = step.input_slots[i];
      if (slot < 0 || last_reader[slot] != s) continue;
      // Move only on the last use within this step too (an input may repeat: Mul(x, x)).
      bool later_in_step = false;
      for (size_t j = i + 1; j < step.input_slots.size(); ++j)
        if (step.input_slots[j] == slot) later_in_step = true;
      if (!later_in_step) step.input_moves[i] = 1;
    }
  }
  return plan;
}

const Session::Plan& Session::GetPlan(const FeedList& feeds, const std::vector<Output>& fetches,
                                      const std::vector<Operation>& targets) {
  // The signature: each feed's, fetch's and target's node and output index, in order, as
  // bytes. Built in this thread's buffer, which keeps its capacity: no allocation per Run.
  thread_local std::string key;
  key.clear();
  auto add = [](const void* p, int index) {
    key.append(reinterpret_cast<const char*>(&p), sizeof(p));
    key.append(reinterpret_cast<const char*>(&index), sizeof(index));
  };
  for (const auto& f : feeds) add(f.first.node, f.first.index);
  key.push_back('|');
  for (const auto& f : fetches) add(f.node, f.index);
  key.push_back('|');
  for (const auto& t : targets) add(t.node, 0);
  std::lock_guard<std::mutex> lock(plans_mu_);
  auto& slot = plans_[key];
  if (!slot) slot = BuildPlan(feeds, fetches, targets);
  return *slot;
}

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
