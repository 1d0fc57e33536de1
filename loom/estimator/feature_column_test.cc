// Feature columns and their ops on small hand-checked inputs.
#include "loom/estimator/feature_column.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/estimator/feature_column_ops.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"
#include "loom/testing/values.h"
#include "loom/train/gradient_descent.h"

namespace loom::feature_column {
namespace {

using Strings = std::vector<std::string>;
using Ints = std::vector<int64_t>;

Tensor StringMatrix(const Strings& v, int64_t rows, int64_t cols) {
  return Tensor::FromVector(v, Shape{rows, cols});
}

using testing::Values;

// Builds feature columns over constant features and runs them.
struct Fixture {
  Graph graph;
  Scope root{graph};
  Features features;

  void Add(const std::string& key, const Tensor& value) {
    features[key] = Const(root.WithOpName(key), value);
  }
  // A VarLenFeature-shaped SparseTensor feature: rows[r] are row r's values.
  template <typename T>
  void AddSparse(const std::string& key, const std::vector<std::vector<T>>& rows) {
    std::vector<int64_t> indices;
    std::vector<T> values;
    int64_t longest = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      for (size_t j = 0; j < rows[r].size(); ++j) {
        indices.insert(indices.end(), {static_cast<int64_t>(r), static_cast<int64_t>(j)});
        values.push_back(rows[r][j]);
      }
      longest = std::max<int64_t>(longest, rows[r].size());
    }
    const auto n = static_cast<int64_t>(values.size());
    AddSparseFeature(
        features, key,
        {Const(root, Tensor::FromVector(indices, Shape{n, 2})),
         Const(root, Tensor::FromVector(values, Shape{n})),
         Const(root, Tensor::FromVector<int64_t>({static_cast<int64_t>(rows.size()), longest}))});
  }
  std::vector<int64_t> Ids(const CategoricalColumnPtr& column) {
    TransformCache cache(root, features);
    Output ids = cache.Ids(*column).ids;
    Session session(graph);
    return Values<int64_t>(session.Eval(ids));
  }
  Tensor Dense(const std::vector<DenseColumnPtr>& columns,
               const std::map<std::string, Tensor>& variables = {}) {
    Output out = InputLayer(root, features, columns);
    Session session(graph);
    session.RunTarget(GlobalVariablesInitializer(root));
    for (const auto& [name, value] : variables) session.WriteVariable(name, value);
    return session.Eval(out);
  }
};

using testing::ErrorOf;

TEST(FeatureHashTest, StableValuesComputedIndependently) {
  // FNV-1a 64 + fmix64, values from a Python reference implementation.
  EXPECT_EQ(FeatureHash64(""), 0xefd01f60ba992926ULL);
  EXPECT_EQ(FeatureHash64("hello"), 0xe9c562c0fdb23244ULL);
  EXPECT_EQ(FeatureHash64("7"), 0xcf48ffa9f52ba797ULL);
  EXPECT_EQ(HashCombine(0xDECAFCAFFEULL, 3), 0x369225b496931ad4ULL);
}

TEST(NumericColumnTest, CastsReshapesAndNormalizes) {
  Fixture f;
  f.Add("age", Tensor::FromVector<int32_t>({20, 30, 40}));
  f.Add("xy", Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, Shape{3, 2}));
  auto age = NumericColumn("age", {.normalizer_fn = [](const Scope& s, Output x) {
                             return Div(s, Sub(s, x, 30.0f), 10.0f);
                           }});
  auto xy = NumericColumn("xy", {.shape = {2}});
  EXPECT_EQ(xy->dimension(), 2);
  Tensor out = f.Dense({xy, age});  // sorted by name: age, xy
  ASSERT_EQ(out.shape(), (Shape{3, 3}));
  EXPECT_EQ(Values<float>(out), (std::vector<float>{-1, 1, 2, 0, 3, 4, 1, 5, 6}));
}

TEST(NumericColumnTest, ErrorsNameColumnAndKey) {
  Fixture f;
  f.Add("name", StringMatrix({"a", "b"}, 2, 1));
  f.Add("xy", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  std::string missing = ErrorOf([&] { f.Dense({NumericColumn("age")}); });
  EXPECT_NE(missing.find("feature column 'age'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("no feature named 'age'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("'name'"), std::string::npos) << missing;  // lists what is present
  std::string dtype = ErrorOf([&] { f.Dense({NumericColumn("name")}); });
  EXPECT_NE(dtype.find("numeric column 'name' (feature 'name')"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("string"), std::string::npos) << dtype;
  std::string shape = ErrorOf([&] { f.Dense({NumericColumn("xy", {.shape = {2}})}); });
  EXPECT_NE(shape.find("numeric column 'xy'"), std::string::npos) << shape;
  EXPECT_NE(shape.find("[2,3]"), std::string::npos) << shape;
}

TEST(BucketizedColumnTest, BoundariesAreLeftClosed) {
  Fixture f;
  f.Add("x", Tensor::FromVector<float>({-5, 0, 5, 10, 150}));
  auto b = BucketizedColumn(NumericColumn("x"), {0, 10, 100});
  EXPECT_EQ(b->name(), "x_bucketized");
  EXPECT_EQ(b->num_buckets(), 4);
  EXPECT_EQ(f.Ids(b), (Ints{0, 1, 1, 2, 3}));
  Tensor dense = f.Dense({b});
  ASSERT_EQ(dense.shape(), (Shape{5, 4}));
  EXPECT_EQ(Values<float>(dense),
            (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
}

TEST(BucketizedColumnTest, MultiDimensionalSourceOffsetsEachElement) {
  Fixture f;
  f.Add("p", Tensor::FromVector<float>({-1, 1, 1, -1}, Shape{2, 2}));
  auto b = BucketizedColumn(NumericColumn("p", {.shape = {2}}), {0});
  EXPECT_EQ(b->num_buckets(), 4);
  EXPECT_EQ(f.Ids(b), (Ints{0, 3, 1, 2}));
  EXPECT_NE(ErrorOf([] {
              BucketizedColumn(NumericColumn("x"), {1, 1});
            }).find("ascending"),
            std::string::npos);
  auto cat = CategoricalColumnWithIdentity("c", 3);
  EXPECT_NE(ErrorOf([&] { BucketizedColumn(IndicatorColumn(cat), {1}); }).find("NumericColumn"),
            std::string::npos);
}

TEST(VocabularyColumnTest, ListWithOovBucketsAndPadding) {
  Fixture f;
  f.Add("s", StringMatrix({"a", "c", "zzz", "", "b", "hello"}, 3, 2));
  auto col =
      CategoricalColumnWithVocabularyList("s", Strings{"a", "b", "c"}, {.num_oov_buckets = 2});
  EXPECT_EQ(col->num_buckets(), 5);
  const int64_t zzz = 3 + FeatureHash64("zzz") % 2;
  const int64_t hello = 3 + FeatureHash64("hello") % 2;
  EXPECT_EQ(f.Ids(col), (Ints{0, 2, zzz, -1, 1, hello}));
}

TEST(VocabularyColumnTest, DefaultValueAndIntegerVocabulary) {
  Fixture f;
  f.Add("s", Tensor::FromVector<std::string>({"b", "x", ""}));
  f.Add("n", Tensor::FromVector<int64_t>({30, 10, 99, -1}));
  f.Add("n32", Tensor::FromVector<int32_t>({20}));
  EXPECT_EQ(
      f.Ids(CategoricalColumnWithVocabularyList("s", Strings{"a", "b"}, {.default_value = 0})),
      (Ints{1, 0, -1}));
  EXPECT_EQ(f.Ids(CategoricalColumnWithVocabularyList("s", Strings{"a", "b"})), (Ints{1, -1, -1}));
  EXPECT_EQ(f.Ids(CategoricalColumnWithVocabularyList("n", Ints{10, 20, 30})),
            (Ints{2, 0, -1, -1}));
  EXPECT_EQ(f.Ids(CategoricalColumnWithVocabularyList("n32", Ints{10, 20, 30})), (Ints{1}));
  std::string wrong =
      ErrorOf([&] { f.Ids(CategoricalColumnWithVocabularyList("n", Strings{"a"})); });
  EXPECT_NE(wrong.find("categorical column 'n' (feature 'n')"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("int64"), std::string::npos) << wrong;
  EXPECT_NE(ErrorOf([] {
              CategoricalColumnWithVocabularyList("s", Strings{"a", "a"});
            }).find("duplicate"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              CategoricalColumnWithVocabularyList("s", Strings{"a", ""});
            }).find("padding"),
            std::string::npos);
}

TEST(VocabularyColumnTest, FileIsReadThroughEnv) {
  auto env = NewMemEnv();
  WriteFileAtomically(env.get(), "/vocab.txt", "red\ngreen\r\nblue\n");
  WriteFileAtomically(env.get(), "/ints.txt", "5\n7\n");
  Fixture f;
  f.Add("color", Tensor::FromVector<std::string>({"blue", "red", "pink"}));
  f.Add("k", Tensor::FromVector<int64_t>({7, 5}));
  EXPECT_EQ(f.Ids(CategoricalColumnWithVocabularyFile("color", "/vocab.txt", {.env = env.get()})),
            (Ints{2, 0, -1}));
  EXPECT_EQ(
      f.Ids(CategoricalColumnWithVocabularyFile(
          "color", "/vocab.txt", {.vocabulary_size = 2, .num_oov_buckets = 1, .env = env.get()})),
      (Ints{2, 0, 2}));
  EXPECT_EQ(f.Ids(CategoricalColumnWithVocabularyFile("k", "/ints.txt",
                                                      {.dtype = kInt64, .env = env.get()})),
            (Ints{1, 0}));
  try {
    CategoricalColumnWithVocabularyFile("color", "/missing.txt", {.env = env.get()});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("/missing.txt"), std::string::npos);
  }
}

TEST(HashBucketColumnTest, StringsAndIntegersHashAlike) {
  Fixture f;
  f.Add("s", StringMatrix({"hello", "7", "", "hello"}, 2, 2));
  f.Add("i", Tensor::FromVector<int64_t>({7, -1}));
  auto s = CategoricalColumnWithHashBucket("s", 10);
  const int64_t hello = FeatureHash64("hello") % 10;
  const int64_t seven = FeatureHash64("7") % 10;
  EXPECT_EQ(hello, 4);
  EXPECT_EQ(seven, 9);
  EXPECT_EQ(f.Ids(s), (Ints{hello, seven, -1, hello}));
  EXPECT_EQ(f.Ids(CategoricalColumnWithHashBucket("i", 10, kInt64)), (Ints{seven, -1}));
  std::string wrong = ErrorOf([&] { f.Ids(CategoricalColumnWithHashBucket("i", 10)); });
  EXPECT_NE(wrong.find("categorical column 'i' (feature 'i')"), std::string::npos) << wrong;
}

TEST(IdentityColumnTest, OutOfRangeUsesDefaultOrFailsNamingTheColumn) {
  Fixture f;
  f.Add("id", Tensor::FromVector<int32_t>({0, 2, 5, -1}));
  EXPECT_EQ(f.Ids(CategoricalColumnWithIdentity("id", 3, 1)), (Ints{0, 2, 1, -1}));
  std::string err = ErrorOf([&] { f.Ids(CategoricalColumnWithIdentity("id", 3)); });
  EXPECT_NE(err.find("identity column 'id' (feature 'id')"), std::string::npos) << err;
  EXPECT_NE(err.find("id 5"), std::string::npos) << err;
  EXPECT_NE(err.find("[0, 3)"), std::string::npos) << err;
}

TEST(CrossedColumnTest, HashesCombinationsAndPropagatesPadding) {
  Fixture f;
  f.Add("a", Tensor::FromVector<int64_t>({0, 1, 2, -1, 1, 0}, Shape{3, 2}));
  f.Add("b", Tensor::FromVector<std::string>({"x", "y", ""}));
  auto a = CategoricalColumnWithIdentity("a", 3);
  auto cross = CrossedColumn({a, "b"}, 1000);
  EXPECT_EQ(cross->name(), "a_X_b");
  auto expected = [](int64_t id, const std::string& key) {
    uint64_t h = HashCombine(0xDECAFCAFFEULL, id);
    h = HashCombine(h, FeatureHash64(key) & 0x7fffffffffffffffULL);
    return static_cast<int64_t>(h % 1000);
  };
  EXPECT_EQ(f.Ids(cross), (Ints{expected(0, "x"), expected(1, "x"), expected(2, "y"), -1, -1, -1}));
  // Order of the inputs matters for the hash, not for the name.
  EXPECT_EQ(CrossedColumn({"b", a}, 10)->name(), "a_X_b");
  EXPECT_NE(ErrorOf([&] { CrossedColumn({a}, 10); }).find("at least two"), std::string::npos);
}

TEST(IndicatorColumnTest, MultiHotCountsRepeatsAndSkipsPadding) {
  Fixture f;
  f.Add("c", Tensor::FromVector<int64_t>({0, 2, 2, 1, -1, -1}, Shape{2, 3}));
  auto ind = IndicatorColumn(CategoricalColumnWithIdentity("c", 4));
  EXPECT_EQ(ind->name(), "c_indicator");
  Tensor out = f.Dense({ind});
  ASSERT_EQ(out.shape(), (Shape{2, 4}));
  EXPECT_EQ(Values<float>(out), (std::vector<float>{1, 0, 2, 0, 0, 1, 0, 0}));
}

TEST(WeightedCategoricalColumnTest, IndicatorSumsWeights) {
  Fixture f;
  f.Add("c", Tensor::FromVector<int64_t>({0, 2, 1, -1}, Shape{2, 2}));
  f.Add("w", Tensor::FromVector<float>({0.5f, 2.f, 3.f, 100.f}, Shape{2, 2}));
  auto weighted = WeightedCategoricalColumn(CategoricalColumnWithIdentity("c", 3), "w");
  EXPECT_EQ(weighted->name(), "c_weighted_by_w");
  Tensor out = f.Dense({IndicatorColumn(weighted)});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{0.5f, 0, 2, 0, 3, 0}));
  auto bad = WeightedCategoricalColumn(CategoricalColumnWithIdentity("c", 3), "nope");
  std::string err = ErrorOf([&] { f.Dense({IndicatorColumn(bad)}); });
  EXPECT_NE(err.find("no feature named 'nope'"), std::string::npos) << err;
  EXPECT_NE(err.find("c_weighted_by_nope"), std::string::npos) << err;
}

TEST(EmbeddingColumnTest, CombinersOverATableSetByHand) {
  // Table rows: id i -> (i, 10 i). Rows: {0, 1}, {2, absent}, {absent, absent}.
  const Tensor table = Tensor::FromVector<float>({0, 0, 1, 10, 2, 20}, Shape{3, 2});
  const Tensor ids = Tensor::FromVector<int64_t>({0, 1, 2, -1, -1, -1}, Shape{3, 2});
  const std::string var = "input_layer/c_embedding/embedding_weights";
  struct Case {
    Combiner combiner;
    std::vector<float> expected;
  };
  for (const Case& c :
       {Case{Combiner::kSum, {1, 10, 2, 20, 0, 0}}, Case{Combiner::kMean, {0.5f, 5, 2, 20, 0, 0}},
        Case{Combiner::kSqrtN, {1 / std::sqrt(2.f), 10 / std::sqrt(2.f), 2, 20, 0, 0}}}) {
    Fixture f;
    f.Add("c", ids);
    auto emb = EmbeddingColumn(CategoricalColumnWithIdentity("c", 3),
                               {.dimension = 2, .combiner = c.combiner});
    Tensor out = f.Dense({emb}, {{var, table}});
    ASSERT_EQ(out.shape(), (Shape{3, 2}));
    std::vector<float> got = Values<float>(out);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], c.expected[i], 1e-5) << i;
  }
  // Weighted mean: (2 * row0 + 1 * row1) / 3.
  Fixture f;
  f.Add("c", Tensor::FromVector<int64_t>({0, 1}, Shape{1, 2}));
  f.Add("w", Tensor::FromVector<float>({2, 1}, Shape{1, 2}));
  auto emb = EmbeddingColumn(WeightedCategoricalColumn(CategoricalColumnWithIdentity("c", 3), "w"),
                             {.dimension = 2});
  Tensor out = f.Dense({emb}, {{"input_layer/c_weighted_by_w_embedding/embedding_weights", table}});
  EXPECT_NEAR(Values<float>(out)[0], 1 / 3.f, 1e-6);
  EXPECT_NEAR(Values<float>(out)[1], 10 / 3.f, 1e-5);
}

TEST(InputLayerTest, SortsByNameSharesTransformsAndRejectsDuplicates) {
  Fixture f;
  f.Add("b", Tensor::FromVector<float>({1, 2}));
  f.Add("a", Tensor::FromVector<int64_t>({1, 0}));
  auto a = CategoricalColumnWithIdentity("a", 2);
  Tensor out = f.Dense({NumericColumn("b"), IndicatorColumn(a)});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{0, 1, 1, 1, 0, 2}));
  EXPECT_NE(ErrorOf([&] {
              f.Dense({NumericColumn("b"), NumericColumn("b")});
            }).find("unique"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { f.Dense({}); }).find("empty"), std::string::npos);
}

TEST(LinearModelTest, WeightedSumsWithSparseGradients) {
  Fixture f;
  f.Add("c", Tensor::FromVector<std::string>({"x", "z", "y", ""}, Shape{2, 2}));
  f.Add("n", Tensor::FromVector<float>({1, 2}));
  f.Add("age", Tensor::FromVector<float>({5, 50}));
  auto c = CategoricalColumnWithVocabularyList("c", Strings{"x", "y", "z"});
  auto age = BucketizedColumn(NumericColumn("age"), {10});
  Output logits = LinearModel(f.root, f.features, {c, NumericColumn("n"), age}, {.units = 2});
  ASSERT_EQ(logits.shape().dim(1), 2);
  Session session(f.graph);
  session.RunTarget(GlobalVariablesInitializer(f.root));
  EXPECT_EQ(Values<float>(session.Eval(logits)), (std::vector<float>{0, 0, 0, 0}));
  session.WriteVariable("linear_model/c/weights",
                        Tensor::FromVector<float>({1, 0, 10, 0, 100, 0}, Shape{3, 2}));
  session.WriteVariable("linear_model/n/weights", Tensor::FromVector<float>({0, 1}, Shape{1, 2}));
  session.WriteVariable("linear_model/age_bucketized/weights",
                        Tensor::FromVector<float>({0, 1000, 0, 2000}, Shape{2, 2}));
  session.WriteVariable("linear_model/bias_weights", Tensor::FromVector<float>({0.5f, -0.5f}));
  // Row 0: x + z = 101, n = 1, age bucket 0. Row 1: y = 10, n = 2, age bucket 1.
  EXPECT_EQ(Values<float>(session.Eval(logits)),
            (std::vector<float>{101.5f, 1000.5f, 10.5f, 2001.5f}));

  // The categorical weights receive IndexedSlices, the numeric ones a dense gradient.
  train::GradientDescent sgd({.learning_rate = 0.1});
  Output loss = Sum(f.root, logits);
  auto grads = sgd.ComputeGradients(f.root, loss);
  int sparse = 0, dense = 0;
  for (const auto& [grad, var] : grads) {
    if (var.node->name() == "linear_model/c/weights") {
      EXPECT_TRUE(grad.is_sparse());
      ++sparse;
    }
    if (var.node->name() == "linear_model/n/weights") {
      EXPECT_FALSE(grad.is_sparse());
      ++dense;
    }
  }
  EXPECT_EQ(sparse, 1);
  EXPECT_EQ(dense, 1);
}

TEST(SparseFeatureTest, TravelsAsThreeEntriesAndRejectsClashes) {
  Fixture f;
  f.AddSparse<int64_t>("c", {{1}, {}});
  EXPECT_EQ(f.features.size(), 3u);
  EXPECT_TRUE(f.features.count("c/indices") && f.features.count("c/values") &&
              f.features.count("c/dense_shape"));
  ASSERT_TRUE(FindSparseFeature(f.features, "c"));
  EXPECT_EQ(FindSparseFeature(f.features, "c")->dtype(), kInt64);
  EXPECT_FALSE(FindSparseFeature(f.features, "d"));
  EXPECT_NE(ErrorOf([&] { f.AddSparse<int64_t>("c", {{1}}); }).find("given twice"),
            std::string::npos);
}

TEST(SparseFeatureTest, CategoricalColumnsReadVarLenRows) {
  // Rows {"z", "x", "x"}, {}, {"y"}: the same results as the dense rows padded with "".
  Fixture f;
  f.AddSparse<std::string>("c", {{"z", "x", "x"}, {}, {"y"}});
  auto vocab = CategoricalColumnWithVocabularyList("c", Strings{"x", "y", "z"});
  EXPECT_EQ(f.Ids(vocab), (Ints{2, 0, 0, -1, -1, -1, 1, -1, -1}));
  // Indicator: multi-hot counts.
  EXPECT_EQ(Values<float>(f.Dense({IndicatorColumn(vocab)})),
            (std::vector<float>{2, 0, 1, 0, 0, 0, 0, 1, 0}));
  // Embedding, default combiner mean: row 0 = (2 * x + z) / 3, row 1 = 0, row 2 = y.
  Fixture g;
  g.AddSparse<std::string>("c", {{"z", "x", "x"}, {}, {"y"}});
  const Tensor table = Tensor::FromVector<float>({1, 10, 2, 20, 4, 40}, Shape{3, 2});
  Tensor emb = g.Dense({EmbeddingColumn(vocab, {.dimension = 2})},
                       {{"input_layer/c_embedding/embedding_weights", table}});
  std::vector<float> got = Values<float>(emb);
  const std::vector<float> want = {2, 20, 0, 0, 2, 20};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

TEST(SparseFeatureTest, LinearModelSumsAndIdentityAndHashColumnsWork) {
  Fixture f;
  f.AddSparse<int64_t>("ids", {{0, 2}, {1}, {}});
  f.AddSparse<std::string>("tags", {{"a"}, {}, {"a", "b"}});
  auto ids = CategoricalColumnWithIdentity("ids", 3);
  auto tags = CategoricalColumnWithHashBucket("tags", 5);
  Output logits = LinearModel(f.root, f.features, {ids, tags});
  Session session(f.graph);
  session.RunTarget(GlobalVariablesInitializer(f.root));
  session.WriteVariable("linear_model/ids/weights",
                        Tensor::FromVector<float>({1, 10, 100}, Shape{3, 1}));
  EXPECT_EQ(Values<float>(session.Eval(logits)), (std::vector<float>{101, 10, 0}));
  // The hashed tags of row 2 are the ids of row 0's "a" and of "b".
  TransformCache cache(f.root, f.features);
  std::vector<int64_t> hashed = Values<int64_t>(session.Eval(cache.Ids(*tags).ids));
  ASSERT_EQ(hashed.size(), 6u);
  EXPECT_EQ(hashed[4], hashed[0]);
  EXPECT_EQ(hashed[1], -1);
  EXPECT_EQ(hashed[2], -1);
}

TEST(SparseFeatureTest, NumericColumnRejectsASparseFeature) {
  Fixture f;
  f.AddSparse<float>("x", {{1.f}, {2.f, 3.f}});
  std::string err = ErrorOf([&] { f.Dense({NumericColumn("x")}); });
  EXPECT_NE(err.find("'x' is a SparseTensor"), std::string::npos) << err;
  EXPECT_NE(err.find("tf.sparse.to_dense"), std::string::npos) << err;
}

}  // namespace
}  // namespace loom::feature_column
