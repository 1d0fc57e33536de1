#ifndef LOOM_PYTHON_SRC_BIND_UTIL_H_
#define LOOM_PYTHON_SRC_BIND_UTIL_H_

// Helpers shared by the train and estimator bindings.
//   PyRef         a Python object that C++ may copy and destroy without the GIL (the
//                 Estimator keeps input and model functions in caches and destroys them
//                 inside its loop): the last copy takes the GIL to drop the reference.
//   ToHookList    a Python list of hooks (loom._loom.SessionRunHook objects: the built-in
//                 ones and PyHook) as a C++ HookList; each C++ hook keeps its Python
//                 object alive.
//   WithoutGil    runs a C++ call with the GIL released; whatever it calls back into
//                 Python (hooks, model_fn, input_fn) takes the GIL again.
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "loom/estimator/feature_column.h"
#include "loom/estimator/initializers.h"
#include "loom/estimator/layers.h"
#include "loom/estimator/losses.h"
#include "loom/train/session_run_hook.h"
#include "python/src/convert.h"

namespace loom::python {

class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(pybind11::object object)
      : holder_(new pybind11::object(std::move(object)), [](pybind11::object* o) {
          if (!Py_IsInitialized()) return;  // at interpreter exit: leak, never touch Python
          pybind11::gil_scoped_acquire gil;
          delete o;
        }) {}
  const pybind11::object& get() const { return *holder_; }
  explicit operator bool() const { return holder_ != nullptr; }

 private:
  std::shared_ptr<pybind11::object> holder_;
};

train::HookList ToHookList(const pybind11::handle& hooks);
// A Python list of (Output, value) pairs as feeds; each value converted to the output's
// dtype (convert.h's ToTensor; `what` names the feeds in errors). None is no feeds.
FeedList ToFeedList(const pybind11::handle& feeds, std::string_view what);

template <typename F>
auto WithoutGil(F&& fn) {
  pybind11::gil_scoped_release release;
  return fn();
}

inline std::optional<int64_t> OptionalInt(const pybind11::handle& value) {
  if (value.is_none()) return std::nullopt;
  return value.cast<int64_t>();
}
inline std::optional<double> OptionalDouble(const pybind11::handle& value) {
  if (value.is_none()) return std::nullopt;
  return value.cast<double>();
}

// A feature column as Python holds it (pybind11 has no holder for shared_ptr<const T>):
// the column, and its dense / categorical views where it is one (a bucketized column is
// both).
struct ColumnHandle {
  feature_column::FeatureColumnPtr any;
  feature_column::DenseColumnPtr dense;
  feature_column::CategoricalColumnPtr categorical;
};
// The dense views of `columns`; InvalidArgument naming the first one that is not dense.
std::vector<feature_column::DenseColumnPtr> DenseColumns(const std::vector<ColumnHandle>& columns,
                                                         const char* who);
std::vector<feature_column::FeatureColumnPtr> AnyColumns(const std::vector<ColumnHandle>& columns);

// A tf.losses.Reduction value ("weighted_sum", ...) as Loom's; InvalidArgument naming
// the valid ones otherwise (bind_model_parts.cc).
losses::Reduction ToReduction(const std::string& reduction);

// The layers' arguments as the Python side passes them (bind_model_parts.cc's file comment):
// an initializer as None or a (kind, params) pair; a 2-D size as an int or a pair; a
// regularizer and a variable getter as None or a Python callable.
initializers::Initializer ToInitializer(const pybind11::handle& spec);
layers::Size2D ToSize(const pybind11::handle& value);
layers::Regularizer ToRegularizer(const pybind11::object& regularizer);
layers::VariableGetter ToVariableGetter(const pybind11::object& getter);

// The model parts (layers, losses, metrics, feature columns), called by BindEstimator.
void BindModelParts(pybind11::module_& m);
// The convolution layers of layers_conv_variants.h (bind_conv_layers.cc), called by
// BindModelParts.
void BindConvLayers(pybind11::module_& m);

}  // namespace loom::python

#endif  // LOOM_PYTHON_SRC_BIND_UTIL_H_
