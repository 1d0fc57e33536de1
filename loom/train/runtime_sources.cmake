# The training runtime (included by loom/train/CMakeLists.txt): hooks, MonitoredSession,
# Saver / checkpoints, summaries and event files.
list(APPEND LOOM_TRAIN_SRCS
  session_run_hook.cc
  second_or_step_timer.cc
  saver.cc
  checkpoint_state.cc
  file_writer.cc
  summary.cc
  summary_ops.cc
  scaffold.cc
  monitored_session.cc
  monitored_training_session.cc
  stop_hooks.cc
  stop_signals.cc
  logging_hooks.cc
  checkpoint_saver_hook.cc
  summary_saver_hook.cc
  profiler_hook.cc)
# Checkpoints hold the input iterators' state (data::IteratorResource), so the train layer
# links the data layer, which sits above it. loom_train is created after this file is
# included, hence the deferred call.
cmake_language(DEFER CALL target_link_libraries loom_train PUBLIC loom_data)
loom_test(train_runtime_test SRCS hooks_test.cc monitored_session_test.cc DEPS loom_train)
loom_test(train_checkpoint_test SRCS saver_test.cc DEPS loom_train)
loom_test(train_summary_test SRCS summary_test.cc DEPS loom_train)
loom_test(train_checkpoint_2gib_test SRCS checkpoint_2gib_test.cc DEPS loom_train LABELS slow TIMEOUT 600)
