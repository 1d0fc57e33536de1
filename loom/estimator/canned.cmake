# Feature columns, heads and canned estimators (included by loom/estimator/CMakeLists.txt).
set(_loom_canned_srcs
  feature_column_ops.cc
  feature_column_dense.cc
  feature_column_categorical.cc
  feature_column_linear.cc
  head.cc
  canned_linear.cc
  canned_dnn.cc
  canned_dnn_linear.cc)
list(TRANSFORM _loom_canned_srcs PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
list(APPEND LOOM_ESTIMATOR_SRCS ${_loom_canned_srcs})

loom_test(estimator_canned_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/feature_column_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/head_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/canned_test.cc
  DEPS loom_estimator)
