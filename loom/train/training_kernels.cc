#include "loom/train/training_kernels.h"

#include <cmath>
#include <unordered_map>

#include "loom/base/strcat.h"

namespace loom::train::internal {
namespace {

const std::string& RefName(const KernelContext& c, int i) { return c.node().input(i).node->name(); }

}  // namespace

// Locks every distinct variable before touching any value (see the header).
LockedRefs::LockedRefs(const KernelContext& c, int num_refs) {
  LOOM_CHECK(num_refs >= 1 && num_refs <= kMaxRefs) << num_refs << " refs";
  for (int i = 0; i < num_refs; ++i) vars_[i] = &c.variable(i);
  const std::array<VariableResource*, kMaxRefs>& vars = vars_;
  std::array<VariableResource*, kMaxRefs> order = vars;
  std::sort(order.begin(), order.begin() + num_refs);
  const int distinct =
      static_cast<int>(std::unique(order.begin(), order.begin() + num_refs) - order.begin());
  for (int i = 0; i < distinct; ++i) locks_[i] = std::unique_lock<Mutex>(order[i]->mu());
  for (int i = 0; i < num_refs; ++i) CheckInitialized(c, *vars[i], i);
  for (int i = 0; i < num_refs; ++i) values_[i] = &vars[i]->MutableValue();
  const Tensor& var = *values_[0];
  for (int i = 1; i < num_refs; ++i) {
    const Tensor& slot = *values_[i];
    if (slot.dtype() != var.dtype() || slot.shape() != var.shape()) {
      c.Fail("slot '", RefName(c, i), "' holds ", DTypeName(slot.dtype()), slot.shape(),
             " but variable '", RefName(c, 0), "' holds ", DTypeName(var.dtype()), var.shape());
    }
  }
}

bool CpuHasAvx2Fma() {
#if defined(__x86_64__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
#else
  return false;
#endif
}

UpdateIsa ActiveUpdateIsa() {
  static const UpdateIsa isa = CpuHasAvx512F()   ? UpdateIsa::kAvx512
                               : CpuHasAvx2Fma() ? UpdateIsa::kAvx2
                                                 : UpdateIsa::kBaseline;
  return isa;
}

double ScalarInput(const KernelContext& c, int i) {
  const Tensor& t = c.input(i);
  if (t.NumElements() != 1) {
    c.Fail("input ", i, " (", c.node().input(i).name(), ") must be a scalar, got shape ",
           t.shape());
  }
  switch (t.dtype()) {
    case kFloat32:
      return t.scalar<float>();
    case kFloat64:
      return t.scalar<double>();
    case kInt32:
      return t.scalar<int32_t>();
    case kInt64:
      return static_cast<double>(t.scalar<int64_t>());
    default:
      c.Fail("input ", i, " (", c.node().input(i).name(), ") has dtype ", DTypeName(t.dtype()),
             "; expected a float32 or float64 scalar");
  }
}

void FailNonFiniteUpdate(const KernelContext& c, const Tensor& grad) {
  int64_t bad = 0, first = -1;
  SwitchFloat(grad.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = grad.data<T>();
    for (int64_t i = 0; i < grad.NumElements(); ++i) {
      if (!std::isfinite(g[i])) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    return 0;
  });
  const std::string source =
      bad > 0 ? StrCat("from its gradient: ", bad, " of ", grad.NumElements(),
                       " gradient elements are NaN or Inf, the first at flat index ", first)
              : std::string(
                    "the gradient was finite; the update itself overflowed or the "
                    "variable already held a NaN or Inf");
  c.Fail("NaN or Inf in the update of variable '", RefName(c, 0), "' (", source,
         "). Check the input data for NaN or Inf (e.g. a 'nan' in a CSV column), lower the "
         "learning rate, or clip the gradients; the variable is left partly updated, and the "
         "last checkpoint is the state to resume from");
}

void CheckDenseGrad(const KernelContext& c, const Tensor& var, const Tensor& grad) {
  if (grad.dtype() != var.dtype() || grad.shape() != var.shape()) {
    c.Fail("gradient ", DTypeName(grad.dtype()), grad.shape(), " does not match variable '",
           RefName(c, 0), "' of ", DTypeName(var.dtype()), var.shape());
  }
}

int64_t GroupSparseRows(const KernelContext& c, const Tensor& var, const Tensor& values,
                        const Tensor& indices, RowGroups& groups) {
  const std::string& name = RefName(c, 0);
  if (var.rank() < 1) c.Fail("variable '", name, "' is a scalar; sparse updates need rows");
  const int64_t n = indices.NumElements();
  if (indices.rank() != 1 || values.dtype() != var.dtype() || values.rank() != var.rank() ||
      values.dim(0) != n) {
    c.Fail("sparse gradient values ", DTypeName(values.dtype()), values.shape(), " with indices ",
           indices.shape(), " do not fit variable '", name, "' of ", DTypeName(var.dtype()),
           var.shape(), ": expected values [", n, ", ...row shape] and indices [", n, "]");
  }
  for (int d = 1; d < var.rank(); ++d) {
    if (values.dim(d) != var.dim(d)) {
      c.Fail("sparse gradient rows ", values.shape(), " do not match the rows of variable '", name,
             "' of shape ", var.shape());
    }
  }
  const int64_t num_rows = var.dim(0);
  const int64_t row_size = num_rows == 0 ? 0 : var.NumElements() / num_rows;
  if (indices.dtype() != kInt32 && indices.dtype() != kInt64) {
    c.Fail("indices must be int32 or int64, got ", DTypeName(indices.dtype()));
  }
  groups.rows.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row =
        indices.dtype() == kInt32 ? indices.data<int32_t>()[i] : indices.data<int64_t>()[i];
    if (row < 0 || row >= num_rows) {
      c.Fail("index ", row, " (position ", i, ") is outside [0, ", num_rows, ") for variable '",
             name, "' of shape ", var.shape());
    }
    groups.rows[i] = row;
  }
  std::unordered_map<int64_t, int64_t> position;
  position.reserve(n);
  std::vector<int64_t> slot_of(n);
  bool duplicates = false;
  for (int64_t i = 0; i < n; ++i) {
    auto [it, inserted] = position.emplace(groups.rows[i], static_cast<int64_t>(position.size()));
    slot_of[i] = it->second;
    duplicates |= !inserted;
  }
  if (duplicates) {
    std::vector<int64_t> unique(position.size());
    for (int64_t i = 0; i < n; ++i) unique[slot_of[i]] = groups.rows[i];
    groups.rows = std::move(unique);
    groups.slot_of = std::move(slot_of);
  }
  return row_size;
}

}  // namespace loom::train::internal
