#include "loom/estimator/tf_inputs.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "loom/base/error.h"
#include "loom/io/csv.h"
#include "loom/io/example_builder.h"
#include "loom/io/record_reader.h"

namespace loom {
namespace {

// One group of CSV columns: a tensor input's row or one tf.Example feature.
struct Target {
  std::string name;  // input key or feature key
  bool feature = false;
  bool var_len = false;
  bool optional = false;  // a feature the graph can do without (default, or var_len)
  DType dtype = kFloat32;
  Shape row_shape;    // tensor input: the shape after the batch dim; feature: its shape
  int64_t width = 1;  // values per row (var_len: one column)
  std::vector<int> columns;
};

// KEY for one value per row, else KEY_0 ... KEY_{width-1}.
std::vector<std::string> ColumnNames(const Target& t) {
  if (t.width == 1) return {t.name};
  std::vector<std::string> names;
  for (int64_t j = 0; j < t.width; ++j) names.push_back(StrCat(t.name, "_", j));
  return names;
}

bool CsvDType(DType d) {
  return d == kFloat32 || d == kFloat64 || d == kInt32 || d == kInt64 || d == kString;
}

// Copies scalar `v` into element i of `t` (same dtype).
void SetElement(Tensor& t, int64_t i, const Tensor& v) {
  if (t.dtype() == kString) {
    t.data<std::string>()[i] = v.flat<std::string>()[0];
  } else {
    const size_t n = DTypeSize(t.dtype());
    std::memcpy(static_cast<char*>(t.raw_data()) + i * n, v.raw_data(), n);
  }
}

bool Blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

}  // namespace

std::map<std::string, Tensor> TfInputsFromCsv(Env* env, const std::string& csv_path,
                                              const TfSignature& signature,
                                              const std::string& signature_name) {
  const std::string file = StrCat("CSV file '", csv_path, "'");
  const std::string sig = StrCat("signature '", signature_name, "'");
  if (!env->FileExists(csv_path)) throw NotFound(file, " does not exist");
  CsvRecordReader records(env->NewSequentialFile(csv_path), csv_path);
  std::optional<std::vector<std::string>> header = records.Next();
  if (!header) throw InvalidArgument(file, " is empty; it needs a header row naming the columns");
  std::map<std::string, int> column_of;
  for (size_t i = 0; i < header->size(); ++i) {
    if (!column_of.emplace((*header)[i], static_cast<int>(i)).second) {
      throw InvalidArgument(file, ": column '", (*header)[i], "' appears twice in the header");
    }
  }

  // What the columns feed.
  std::vector<Target> targets;
  for (const auto& [key, info] : signature.inputs) {
    if (key == signature.example_input) continue;
    Target t{.name = key, .dtype = info.dtype};
    if (!CsvDType(info.dtype)) {
      throw InvalidArgument(file, ": input '", key, "' of ", sig, " is ", DTypeName(info.dtype),
                            "; CSV gives float32, float64, int32, int64 or string inputs (feed ",
                            "it as --input ", key, "=FILE.npy)");
    }
    if (!info.shape.rank_known() || info.shape.rank() == 0) {
      throw InvalidArgument(file, ": input '", key, "' of ", sig, " has shape ",
                            info.shape.ToString(), ", not [batch, ...]; CSV rows cannot give it ",
                            "(feed it as --input ", key, "=FILE.npy or .tfrecord)");
    }
    std::vector<int64_t> dims(info.shape.dims().begin() + 1, info.shape.dims().end());
    t.row_shape = Shape(dims);
    if (!t.row_shape.fully_defined()) {
      throw InvalidArgument(file, ": input '", key, "' of ", sig, " has shape ",
                            info.shape.ToString(),
                            "; CSV needs every dimension after the "
                            "first known (feed it as --input ",
                            key, "=FILE.npy)");
    }
    t.width = t.row_shape.num_elements();
    targets.push_back(std::move(t));
  }
  for (const TfExampleFeature& f : signature.example_features) {
    Target t{.name = f.key,
             .feature = true,
             .var_len = f.var_len,
             .optional = f.var_len || f.has_default,
             .dtype = f.dtype};
    if (!f.var_len) {
      t.row_shape = f.shape;
      t.width = f.shape.num_elements();
    }
    targets.push_back(std::move(t));
  }

  // Columns -> targets.
  std::set<int> used;
  std::vector<std::string> missing;
  for (Target& t : targets) {
    const std::vector<std::string> names = ColumnNames(t);
    std::vector<std::string> absent;
    for (const std::string& n : names) {
      auto it = column_of.find(n);
      if (it == column_of.end()) {
        absent.push_back(n);
      } else {
        t.columns.push_back(it->second);
        used.insert(it->second);
      }
    }
    if (absent.empty()) continue;
    if (t.columns.empty() && t.optional) continue;  // the graph's default applies
    const std::string what = t.feature ? StrCat("tf.Example feature '", t.name, "' (",
                                                DTypeName(t.dtype), t.row_shape.ToString(), ")")
                                       : StrCat("input '", t.name, "' (", DTypeName(t.dtype),
                                                signature.inputs.at(t.name).shape.ToString(), ")");
    missing.push_back(
        StrCat(what, " needs column", absent.size() > 1 ? "s " : " ", StrJoin(absent, ", ")));
  }
  if (!missing.empty()) {
    throw InvalidArgument(file, " lacks columns for ", sig, ": ", StrJoin(missing, "; "));
  }
  std::vector<std::string> extra;
  for (size_t i = 0; i < header->size(); ++i) {
    if (!used.count(static_cast<int>(i))) extra.push_back(StrCat("'", (*header)[i], "'"));
  }
  if (!extra.empty()) {
    std::vector<std::string> expected;
    for (const Target& t : targets) {
      for (const std::string& n : ColumnNames(t)) expected.push_back(n);
    }
    throw InvalidArgument(file, ": column", extra.size() > 1 ? "s " : " ", StrJoin(extra, ", "),
                          " match", extra.size() > 1 ? " " : "es ", "nothing in ", sig,
                          " (its columns: ", StrJoin(expected, ", "), ")");
  }

  // The rows.
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> lines;
  while (auto fields = records.Next()) {
    if (fields->size() != header->size()) {
      throw InvalidArgument(file, " line ", records.line(), " (row ", rows.size() + 1, ") has ",
                            fields->size(), " fields; the header has ", header->size());
    }
    rows.push_back(std::move(*fields));
    lines.push_back(records.line());
  }
  if (rows.empty()) throw InvalidArgument(file, " has a header but no rows");
  const int64_t n = static_cast<int64_t>(rows.size());
  auto where = [&](int64_t r, int column) {
    return StrCat(file, " line ", lines[r], " (row ", r + 1, "), column '", (*header)[column], "'");
  };

  std::map<std::string, Tensor> out;
  std::vector<ExampleBuilder> examples(signature.example_input.empty() ? 0 : n);
  for (const Target& t : targets) {
    if (!t.feature) {
      const std::string& key = t.name;
      const Shape& declared = signature.inputs.at(key).shape;
      if (declared.dim(0) >= 0 && declared.dim(0) != n) {
        throw InvalidArgument(file, " has ", n, " rows; input '", key, "' of ", sig,
                              " takes exactly ", declared.dim(0));
      }
      Tensor value(t.dtype, t.row_shape.WithLeadingDim(n));
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t j = 0; j < t.width; ++j) {
          const int column = t.columns[j];
          SetElement(value, r * t.width + j,
                     ParseCsvValue(rows[r][column], t.dtype, where(r, column)));
        }
      }
      out[key] = std::move(value);
      continue;
    }
    if (t.columns.empty()) continue;  // absent: the default (or an empty list) applies
    for (int64_t r = 0; r < n; ++r) {
      std::vector<std::string> cells;
      if (t.var_len) {
        std::istringstream split(rows[r][t.columns[0]]);
        for (std::string token; split >> token;) cells.push_back(token);
      } else {
        int blanks = 0;
        for (int column : t.columns) blanks += Blank(rows[r][column]) ? 1 : 0;
        if (blanks == t.width && t.optional) continue;  // left out: the default applies
        for (int column : t.columns) {
          if (Blank(rows[r][column])) {
            throw InvalidArgument(
                where(r, column), " is empty, and tf.Example feature '", t.name,
                "' has no default in the graph",
                t.width > 1 ? " (fill every "
                              "column of the feature, or leave them all empty when it has "
                              "a default)"
                            : "");
          }
          cells.push_back(rows[r][column]);
        }
      }
      const std::string at = where(r, t.columns[0]);
      if (t.dtype == kFloat32) {
        std::vector<float> v;
        v.reserve(cells.size());
        for (const auto& c : cells) v.push_back(ParseCsvValue(c, kFloat32, at).scalar<float>());
        examples[r].AddFloats(t.name, v);
      } else if (t.dtype == kInt64) {
        std::vector<int64_t> v;
        v.reserve(cells.size());
        for (const auto& c : cells) v.push_back(ParseCsvValue(c, kInt64, at).scalar<int64_t>());
        examples[r].AddInt64s(t.name, v);
      } else {
        examples[r].AddBytes(t.name, cells);
      }
    }
  }
  if (!signature.example_input.empty()) {
    Tensor serialized(kString, {n});
    for (int64_t r = 0; r < n; ++r) serialized.data<std::string>()[r] = examples[r].Serialize();
    out[signature.example_input] = std::move(serialized);
  }
  return out;
}

Tensor ReadTfRecordsAsStrings(Env* env, const std::string& path) {
  if (!env->FileExists(path)) throw NotFound("TFRecord file '", path, "' does not exist");
  auto reader = RecordReader::OpenSequential(
      env, path, {.compression = path.ends_with(".gz") ? Compression::kGzip : Compression::kNone});
  std::vector<std::string> records;
  for (std::string record; reader->ReadRecord(&record);) records.push_back(record);
  if (records.empty()) throw InvalidArgument("TFRecord file '", path, "' holds no records");
  return Tensor::FromVector<std::string>(records);
}

}  // namespace loom
