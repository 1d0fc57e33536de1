#ifndef LOOM_ESTIMATOR_TF_INPUTS_H_
#define LOOM_ESTIMATOR_TF_INPUTS_H_

// The inputs of a TF signature (tf_saved_model.h) from the files a user holds, behind
// `loom predict --saved-model DIR --csv FILE` and `--input KEY=FILE.tfrecord`.
//
// CSV (a header row, then one row per example; RFC 4180 quoting) maps columns to the
// signature by header name:
//   - a tensor input KEY of shape [batch] + S takes column KEY when S has one element,
//     else columns KEY_0 ... KEY_{n-1} (row-major over S), the names `loom predict`
//     writes;
//   - the serialized tf.Example input of a classify / regress signature (its
//     example_input) is built from the columns named after its ParseExample features, one
//     Example per row, in the same way: FEATURE or FEATURE_0 ...; a VarLenFeature's cell
//     holds its values separated by spaces (an empty cell is an empty list); an empty cell
//     of a dense feature with a default leaves the feature out, so the graph's default
//     applies.
// Every input (or feature without default) needs its columns, and every column must map
// to one. Errors are InvalidArgument naming the file, and for a bad value its line, row
// and column. Stateless; thread-safe.
#include <map>
#include <string>

#include "loom/base/env.h"
#include "loom/estimator/tf_saved_model.h"
#include "loom/tensor/tensor.h"

namespace loom {

// One tensor per input of `signature` (named `signature_name` in errors) from `csv_path`.
std::map<std::string, Tensor> TfInputsFromCsv(Env* env, const std::string& csv_path,
                                              const TfSignature& signature,
                                              const std::string& signature_name);

// The records of a TFRecord file (".gz": gzip) as a string vector [records], the form a
// serialized tf.Example input takes.
Tensor ReadTfRecordsAsStrings(Env* env, const std::string& path);

}  // namespace loom

#endif  // LOOM_ESTIMATOR_TF_INPUTS_H_
