// Signature inputs from CSV and TFRecord files: half_plus_two's tensor and tf.Example
// signatures fed from CSV rows, and every mapping error naming file, row and column.
#include "loom/estimator/tf_inputs.h"

#include <gtest/gtest.h>

#include "loom/estimator/estimator_test_util.h"
#include "loom/io/example.h"
#include "loom/io/record_writer.h"

namespace loom {
namespace {

const std::string kHalfPlusTwo = JoinPath(LOOM_SHARED_TESTDATA, "tf/half_plus_two/00000123");

class TfInputsTest : public ::testing::Test {
 protected:
  std::string Csv(const std::string& text) {
    const std::string path = dir_.Join("in" + std::to_string(files_++) + ".csv");
    auto f = Env::Default()->NewWritableFile(path);
    f->Append(text);
    f->Close();
    return path;
  }
  // The message of the error that reading `text` for `signature` throws.
  std::string Error(const std::string& text, const std::string& signature) {
    try {
      TfInputsFromCsv(Env::Default(), Csv(text), model_->signatures().at(signature), signature);
    } catch (const loom::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      return e.what();
    }
    return "no error";
  }
  estimator_testing::TempDir dir_;
  int files_ = 0;
  std::unique_ptr<TfModel> model_ = LoadTFSavedModel(Env::Default(), kHalfPlusTwo);
};

TEST_F(TfInputsTest, TensorSignatureFromCsvByHeaderName) {
  const TfSignature& sig = model_->signatures().at("serving_default");
  auto inputs = TfInputsFromCsv(Env::Default(), Csv("x\n1\n2\n\"5\"\n"), sig, "serving_default");
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_TRUE(inputs.at("x").Equals(Tensor::FromVector<float>({1, 2, 5}, Shape{3, 1})));
  EXPECT_TRUE(model_->Run("serving_default", inputs)
                  .at("y")
                  .Equals(Tensor::FromVector<float>({2.5f, 3, 4.5f}, Shape{3, 1})));
  // regress_x2_to_y3 takes tensor "inputs" (x2:0).
  inputs = TfInputsFromCsv(Env::Default(), Csv("inputs\n1\n2\n5\n"),
                           model_->signatures().at("regress_x2_to_y3"), "regress_x2_to_y3");
  EXPECT_TRUE(model_->Run("regress_x2_to_y3", inputs)
                  .at("outputs")
                  .Equals(Tensor::FromVector<float>({3.5f, 4, 5.5f}, Shape{3, 1})));
}

TEST_F(TfInputsTest, WideInputTakesNumberedColumns) {
  TfSignature sig;
  sig.inputs["v"] = {"v:0", kInt64, Shape({-1, 3})};
  sig.inputs["id"] = {"id:0", kString, Shape({-1})};
  auto inputs =
      TfInputsFromCsv(Env::Default(), Csv("v_2,id,v_0,v_1\n3,a,1,2\n6,\"b,c\",4,5\n"), sig, "s");
  EXPECT_TRUE(inputs.at("v").Equals(Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3})));
  EXPECT_TRUE(inputs.at("id").Equals(Tensor::FromVector<std::string>({"a", "b,c"})));
}

TEST_F(TfInputsTest, ExampleSignatureFromCsvBuildsOneExamplePerRow) {
  const TfSignature& sig = model_->signatures().at("classify_x_to_y");
  ASSERT_EQ(sig.example_input, "inputs");
  // The graph parses x (no default) and x2 (its default a Reshape of a constant).
  ASSERT_EQ(sig.example_features.size(), 2u);
  EXPECT_EQ(sig.example_features[0].key, "x");
  EXPECT_EQ(sig.example_features[0].dtype, kFloat32);
  EXPECT_EQ(sig.example_features[0].shape, Shape({1}));
  EXPECT_FALSE(sig.example_features[0].var_len);
  EXPECT_FALSE(sig.example_features[0].has_default);
  EXPECT_EQ(sig.example_features[1].key, "x2");
  EXPECT_TRUE(sig.example_features[1].has_default);
  EXPECT_TRUE(model_->signatures().at("serving_default").example_input.empty());
  auto inputs = TfInputsFromCsv(Env::Default(), Csv("x\n1\n2\n5\n"), sig, "classify_x_to_y");
  const Tensor& records = inputs.at("inputs");
  ASSERT_EQ(records.shape(), Shape({3}));
  ExampleSpec spec;
  spec.fixed["x"] = {.dtype = kFloat32};
  EXPECT_TRUE(ParseExampleBatch(records.flat<std::string>(), spec)
                  .at("x")
                  .values.Equals(Tensor::FromVector<float>({1, 2, 5})));
  const Tensor want = Tensor::FromVector<float>({2.5f, 3, 4.5f}, Shape{3, 1});
  EXPECT_TRUE(model_->Run("classify_x_to_y", inputs).at("scores").Equals(want));
  EXPECT_TRUE(model_->Run("regress_x_to_y", inputs).at("outputs").Equals(want));
}

TEST_F(TfInputsTest, MissingExtraAndBadColumnsNameRowAndColumn) {
  std::string m = Error("z\n1\n", "serving_default");
  EXPECT_NE(m.find("lacks columns for signature 'serving_default'"), std::string::npos) << m;
  EXPECT_NE(m.find("input 'x' (float32[?,1]) needs column x"), std::string::npos) << m;
  m = Error("x,z,w\n1,2,3\n", "serving_default");
  EXPECT_NE(m.find("columns 'z', 'w' match nothing"), std::string::npos) << m;
  EXPECT_NE(m.find("(its columns: x)"), std::string::npos) << m;
  m = Error("x\n1\nabc\n", "serving_default");
  EXPECT_NE(m.find("line 3 (row 2), column 'x': cannot parse 'abc' as float32"), std::string::npos)
      << m;
  m = Error("x\n1\n\n2,3\n", "serving_default");  // blank lines are skipped
  EXPECT_NE(m.find("line 4 (row 2) has 2 fields; the header has 1"), std::string::npos) << m;
  m = Error("x\n", "serving_default");
  EXPECT_NE(m.find("no rows"), std::string::npos) << m;
  m = Error("x,x\n1,2\n", "serving_default");
  EXPECT_NE(m.find("column 'x' appears twice"), std::string::npos) << m;
  // tf.Example features: "x" has no default in half_plus_two's graph.
  m = Error("y\n1\n", "classify_x_to_y");
  EXPECT_NE(m.find("tf.Example feature 'x' (float32[1]) needs column x"), std::string::npos) << m;
  m = Error("x\n1\n \n", "classify_x_to_y");
  EXPECT_NE(m.find("line 3 (row 2), column 'x' is empty, and tf.Example feature 'x' has no "
                   "default"),
            std::string::npos)
      << m;
  m = Error("x\n1e\n", "regress_x_to_y2");
  EXPECT_NE(m.find("line 2 (row 1), column 'x': cannot parse '1e' as float32"), std::string::npos)
      << m;
}

TEST_F(TfInputsTest, VarLenAndDefaultedFeatures) {
  TfSignature sig;
  sig.inputs["examples"] = {"ex:0", kString, Shape::Unknown()};
  sig.example_input = "examples";
  sig.example_features = {
      {.key = "age", .dtype = kInt64, .shape = Shape(), .has_default = true},
      {.key = "pos", .dtype = kFloat32, .shape = Shape({2})},
      {.key = "tags", .dtype = kString, .shape = Shape::Unknown(), .var_len = true},
  };
  auto inputs =
      TfInputsFromCsv(Env::Default(), Csv("tags,pos_0,pos_1,age\na b,1,2,7\n,3,4,\n"), sig, "s");
  const Tensor& records = inputs.at("examples");
  ASSERT_EQ(records.NumElements(), 2);
  ExampleSpec spec;
  spec.fixed["age"] = {.dtype = kInt64, .default_value = Tensor::Scalar<int64_t>(-1)};
  spec.fixed["pos"] = {.dtype = kFloat32, .shape = Shape({2})};
  spec.var_len["tags"] = {.dtype = kString};
  ParsedFeatures parsed = ParseExampleBatch(records.flat<std::string>(), spec);
  EXPECT_TRUE(parsed.at("age").values.Equals(Tensor::FromVector<int64_t>({7, -1})));
  EXPECT_TRUE(parsed.at("pos").values.Equals(Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2})));
  EXPECT_TRUE(parsed.at("tags").values.Equals(Tensor::FromVector<std::string>({"a", "b"})));
  EXPECT_TRUE(parsed.at("tags").row_splits.Equals(Tensor::FromVector<int64_t>({0, 2, 2})));
  // The optional features may be left out entirely; "pos" may not be half given.
  inputs = TfInputsFromCsv(Env::Default(), Csv("pos_0,pos_1\n1,2\n"), sig, "s");
  EXPECT_EQ(inputs.at("examples").NumElements(), 1);
  try {
    TfInputsFromCsv(Env::Default(), Csv("pos_0\n1\n"), sig, "s");
    ADD_FAILURE() << "no error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'pos' (float32[2]) needs column pos_1"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(TfInputsTest, TfRecordFileAsStringVector) {
  const std::string path = dir_.Join("ex.tfrecord");
  {
    auto w = RecordWriter::Open(Env::Default(), path, {});
    w->WriteRecord("one");
    w->WriteRecord("two");
    w->Close();
  }
  EXPECT_TRUE(ReadTfRecordsAsStrings(Env::Default(), path)
                  .Equals(Tensor::FromVector<std::string>({"one", "two"})));
  try {
    ReadTfRecordsAsStrings(Env::Default(), dir_.Join("none.tfrecord"));
    ADD_FAILURE() << "no error";
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
  }
}

}  // namespace
}  // namespace loom
