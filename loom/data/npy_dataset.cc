// FromNpy: rows of memory-mapped .npy arrays. The tensors come from ReadNpy (a view of the
// mapping when the layout allows), and the dataset is index-addressable over them, so it
// behaves exactly like FromTensorSlices over a borrowed tensor: rows are views, batches
// are memcpy gathers, state is row indices. Also ArraySlices, shared with FromIdx.
#include "loom/data/file_sources_internal.h"
#include "loom/data/row_source.h"
#include "loom/io/npy.h"

namespace loom::data {
namespace internal {
namespace {

class ArraySlicesDataset : public DatasetImpl {
 public:
  ArraySlicesDataset(const std::string& stage, Element tensors, ElementSpec spec)
      : DatasetImpl(stage, std::move(spec), {}), tensors_(std::move(tensors)) {}

  std::string Params() const override { return StrCat("rows=", tensors_.begin()->second.dim(0)); }

  bool indexed() const override { return true; }
  std::shared_ptr<const RowSource> MakeRows(const IteratorContext&) const override {
    return MakeTensorRows(tensors_);
  }
  std::unique_ptr<IndexCursor> MakeIndexCursor(const IteratorContext&) const override {
    return MakeSequentialIndexCursor(tensors_.begin()->second.dim(0));
  }

 private:
  Element tensors_;
};

}  // namespace

Dataset ArraySlices(const std::string& stage, Element tensors,
                    const std::map<std::string, std::string>& paths) {
  CheckArg(!tensors.empty(), stage, "needs at least one file");
  auto path_of = [&](const std::string& name) {
    auto it = paths.find(name);
    return it == paths.end() ? name : it->second;
  };
  const auto& [first_name, first] = *tensors.begin();
  ElementSpec spec;
  for (const auto& [name, t] : tensors) {
    CheckArg(t.rank() >= 1, stage, "'", path_of(name), "' holds a 0-d array (a scalar) of ",
             DTypeName(t.dtype()),
             "; slicing into elements needs rank >= 1 (read it with "
             "ReadNpy/ReadIdx and use FromTensors for a single element)");
    CheckArg(t.dim(0) == first.dim(0), stage, "'", path_of(first_name), "' has ", first.dim(0),
             " rows but '", path_of(name), "' has ", t.dim(0),
             "; the files of one dataset must have the same dim 0");
    spec[name] = {t.dtype(), t.shape().WithoutLeadingDim()};
  }
  return Dataset(std::make_shared<ArraySlicesDataset>(stage, std::move(tensors), std::move(spec)));
}

}  // namespace internal

Dataset FromNpy(const std::map<std::string, std::string>& paths, NpyOptions options) {
  constexpr const char* kStage = "FromNpy";
  CheckArg(!paths.empty(), kStage, "needs at least one {name: path}");
  Env* env = internal::EnvOr(options.env);
  Element tensors;
  for (const auto& [name, path] : paths) {
    CheckArg(!name.empty(), kStage, "component name for '", path, "' is empty");
    try {
      tensors[name] =
          ReadNpy(env, path, {.convert_unsupported_dtypes = options.convert_unsupported_dtypes});
    } catch (const Error& e) {
      throw WithContext(e, kStage, " component '", name, "'");
    }
  }
  return internal::ArraySlices(kStage, std::move(tensors), paths);
}

Dataset FromNpy(const std::string& path, NpyOptions options) {
  return FromNpy(std::map<std::string, std::string>{{"x", path}}, options);
}

}  // namespace loom::data
