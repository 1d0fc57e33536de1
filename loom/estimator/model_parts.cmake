# Layers, losses, initializers and metrics for model functions (included by
# loom/estimator/CMakeLists.txt).
list(APPEND LOOM_ESTIMATOR_SRCS
  ${CMAKE_CURRENT_SOURCE_DIR}/initializers.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/layers_dense.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/layers_conv.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/layers_norm.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/losses.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/metrics_ops.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/metrics_basic.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/metrics_curve.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/metrics_classes.cc)
loom_test(estimator_parts_test
  SRCS layers_test.cc losses_test.cc metrics_test.cc
  DEPS loom_estimator)
