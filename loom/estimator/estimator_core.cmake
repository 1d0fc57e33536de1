# The Estimator core (included by loom/estimator/CMakeLists.txt): Estimator, EstimatorSpec,
# RunConfig, input functions, SavedModel export/serving, warm start, train_and_evaluate.
set(_loom_estimator_core_srcs
  run_config.cc
  estimator_spec.cc
  input_fn.cc
  prediction_range.cc
  estimator.cc
  estimator_train.cc
  estimator_evaluate.cc
  estimator_predict.cc
  export.cc
  saved_model.cc
  all_ops.cc
  warm_start.cc
  tf_checkpoints.cc
  tf_inputs.cc
  tf_ops.cc
  tf_saved_model.cc
  onnx_builder.cc
  onnx_ops.cc
  onnx_ops_array.cc
  onnx_export.cc
  train_and_evaluate.cc)
list(TRANSFORM _loom_estimator_core_srcs PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
list(APPEND LOOM_ESTIMATOR_SRCS ${_loom_estimator_core_srcs})
# saved_model.cc writes its JSON with nlohmann_json; loom_estimator is created after this
# file is included, hence the deferred call.
cmake_language(DEFER CALL target_link_libraries loom_estimator PUBLIC nlohmann_json::nlohmann_json)

# A training process the kill/resume test starts, SIGKILLs and restarts.
add_executable(estimator_kill_helper ${CMAKE_CURRENT_LIST_DIR}/estimator_kill_helper.cc)
cmake_language(DEFER CALL target_link_libraries estimator_kill_helper PRIVATE loom_estimator)
loom_test(estimator_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/estimator_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/estimator_export_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/estimator_kill_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/estimator_stop_test.cc
  DEPS loom_estimator
  TIMEOUT 600)
add_dependencies(estimator_test estimator_kill_helper)
# LevelDB (libleveldb-dev) writes the test bundles (loom/io/tf_checkpoint_test_util.h).
find_package(leveldb REQUIRED)
loom_test(estimator_tf_checkpoint_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/tf_checkpoints_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/tf_inputs_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/tf_saved_model_test.cc
  DEPS loom_estimator leveldb::leveldb)
target_compile_definitions(estimator_test PRIVATE
  LOOM_ESTIMATOR_KILL_HELPER="$<TARGET_FILE:estimator_kill_helper>")
loom_test(estimator_guards_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/estimator_guards_test.cc
  DEPS loom_estimator)

# ONNX export, checked by ONNX Runtime (npm's onnxruntime-node, CPU) and python3-onnx's
# checker. The runtime lives in LOOM_ONNXRUNTIME_NODE_DIR; the fixture test
# onnxruntime_node_install fills it when scripts/install-deps.sh has not (it needs the npm
# registry, and fails saying so when that is unreachable).
set(LOOM_ONNXRUNTIME_NODE_DIR "$ENV{HOME}/.cache/loom/onnxruntime-node" CACHE PATH
    "where scripts/install-onnxruntime-node.sh installs onnxruntime-node for the ONNX tests")
loom_test(estimator_onnx_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/onnx_export_test.cc
  DEPS loom_estimator)
target_compile_definitions(estimator_onnx_test PRIVATE
  LOOM_ONNXRUNTIME_NODE_DIR="${LOOM_ONNXRUNTIME_NODE_DIR}")
add_test(NAME onnxruntime_node_install
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/install-onnxruntime-node.sh ${LOOM_ONNXRUNTIME_NODE_DIR})
set_tests_properties(onnxruntime_node_install PROPERTIES FIXTURES_SETUP onnxruntime TIMEOUT 300)
set_tests_properties(estimator_onnx_test PROPERTIES FIXTURES_REQUIRED onnxruntime)
