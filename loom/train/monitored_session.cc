#include "loom/train/monitored_session.h"

#include <exception>

#include "loom/base/logging.h"

namespace loom::train {
namespace {

class StandardSessionCreator : public SessionCreator {
 public:
  StandardSessionCreator(Graph& graph, SessionCreatorOptions options)
      : graph_(graph), options_(std::move(options)) {
    if (!options_.scaffold) options_.scaffold = std::make_shared<Scaffold>();
  }

  Graph& graph() override { return graph_; }

  std::unique_ptr<Session> CreateSession() override {
    Scaffold& scaffold = *options_.scaffold;
    scaffold.Finalize(graph_);
    auto session = std::make_unique<Session>(graph_, options_.session_options);
    bool restored = false;
    if (!options_.checkpoint_filename_with_path.empty()) {
      scaffold.saver->Restore(*session, options_.checkpoint_filename_with_path);
      restored = true;
    } else if (!options_.checkpoint_dir.empty()) {
      restored = scaffold.saver
                     ->RestoreLatest(
                         *session, options_.checkpoint_dir,
                         {.start_over_if_all_corrupt = options_.start_over_if_checkpoints_corrupt})
                     .has_value();
    }
    if (!restored) {
      if (scaffold.init_op.valid()) session->Run(scaffold.init_feeds, {}, {scaffold.init_op});
      if (scaffold.init_fn) scaffold.init_fn(*session);
    }
    if (scaffold.local_init_op.valid()) session->Run({}, {}, {scaffold.local_init_op});
    std::string uninitialized;
    for (Node* var : graph_.Variables()) {
      if (!session->VariableInitialized(var->name())) {
        uninitialized += (uninitialized.empty() ? "'" : ", '") + var->name() + "'";
      }
    }
    if (!uninitialized.empty()) {
      throw FailedPrecondition("Init operations did not make the model ready: uninitialized ",
                               "variables ", uninitialized, " (",
                               restored ? "restored" : "initialized",
                               "); check the Scaffold's init_op / init_fn or the checkpoint");
    }
    return session;
  }

 private:
  Graph& graph_;
  SessionCreatorOptions options_;
};

}  // namespace

std::unique_ptr<SessionCreator> NewSessionCreator(Graph& graph, SessionCreatorOptions options) {
  return std::make_unique<StandardSessionCreator>(graph, std::move(options));
}

std::vector<Tensor> StepContext::RunWithHooks(const FeedList& feeds,
                                              const std::vector<Output>& fetches,
                                              const std::vector<Operation>& targets) {
  SessionRunArgs args{.fetches = fetches, .feeds = feeds, .targets = targets};
  return owner_.HookedRun(session_, args);
}

MonitoredSession::MonitoredSession(std::unique_ptr<SessionCreator> creator, HookList hooks,
                                   MonitoredSessionOptions options)
    : creator_(std::move(creator)),
      hooks_(std::move(hooks)),
      options_(options),
      uncaught_at_construction_(std::uncaught_exceptions()) {
  for (auto& hook : hooks_) LOOM_CHECK(hook != nullptr) << "MonitoredSession: a null hook";
  for (auto& hook : hooks_) hook->Begin(creator_->graph());
  try {
    CreateSession();
  } catch (...) {
    failed_ = true;
    closed_ = true;
    throw;
  }
}

MonitoredSession::~MonitoredSession() {
  if (closed_) return;
  if (failed_ || std::uncaught_exceptions() > uncaught_at_construction_) {
    closed_ = true;  // an error is propagating: End must not run
    session_.reset();
    return;
  }
  try {
    Close();
  } catch (const std::exception& e) {
    LOOM_LOG(ERROR) << "closing MonitoredSession: " << e.what();
  }
}

void MonitoredSession::CreateSession() {
  session_.reset();
  session_ = creator_->CreateSession();
  for (auto& hook : hooks_) hook->AfterCreateSession(*session_);
}

Session& MonitoredSession::raw_session() {
  LOOM_CHECK(session_ != nullptr) << "MonitoredSession::raw_session after Close or a failure";
  return *session_;
}

std::vector<Tensor> MonitoredSession::HookedRun(Session& session, const SessionRunArgs& args) {
  SessionRunContext context(args, session);
  std::vector<SessionRunArgs> extra;
  extra.reserve(hooks_.size());
  for (auto& hook : hooks_) extra.push_back(hook->BeforeRun(context));
  if (context.stop_requested()) {  // a stop requested before the run cancels the step
    should_stop_ = true;
    return {};
  }

  // One Run: the caller's args first, then each hook's, in hook order.
  FeedList feeds = args.feeds;
  std::vector<Output> fetches = args.fetches;
  std::vector<Operation> targets = args.targets;
  bool trace = args.trace;
  std::vector<size_t> first_fetch(hooks_.size());
  for (size_t i = 0; i < hooks_.size(); ++i) {
    first_fetch[i] = fetches.size();
    fetches.insert(fetches.end(), extra[i].fetches.begin(), extra[i].fetches.end());
    for (const auto& feed : extra[i].feeds) {
      for (const auto& existing : feeds) {
        if (existing.first == feed.first) {
          throw InvalidArgument("Same tensor is fed by a SessionRunHook (hook ", i,
                                ") and by the caller or an earlier hook: ", feed.first.name());
        }
      }
      feeds.push_back(feed);
    }
    targets.insert(targets.end(), extra[i].targets.begin(), extra[i].targets.end());
    trace = trace || extra[i].trace;
  }
  RunOptions run_options{.trace = trace};
  RunMetadata metadata;
  std::vector<Tensor> results = session.Run(feeds, fetches, targets, trace ? &run_options : nullptr,
                                            trace ? &metadata : nullptr);
  for (size_t i = 0; i < hooks_.size(); ++i) {
    SessionRunValues values;
    values.results.assign(results.begin() + first_fetch[i],
                          results.begin() + first_fetch[i] + extra[i].fetches.size());
    values.run_metadata = trace ? &metadata : nullptr;
    hooks_[i]->AfterRun(context, values);
  }
  if (context.stop_requested()) should_stop_ = true;
  results.resize(args.fetches.size());
  return results;
}

std::vector<Tensor> MonitoredSession::RunWithRecovery(
    const std::function<std::vector<Tensor>(Session&)>& fn) {
  if (closed_) throw FailedPrecondition("MonitoredSession: Run called after Close");
  if (should_stop_) throw FailedPrecondition("MonitoredSession: Run called after ShouldStop()");
  int recoveries = 0;
  for (;;) {
    try {
      if (!session_) CreateSession();
      return fn(*session_);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kOutOfRange) {
        LOOM_LOG(INFO) << "End of input, stopping: " << e.message();
        end_of_input_ = true;
        should_stop_ = true;
        return {};
      }
      const bool preempted = e.code() == ErrorCode::kAborted || e.code() == ErrorCode::kUnavailable;
      if (preempted && options_.should_recover &&
          (options_.max_recoveries_per_run < 0 || recoveries < options_.max_recoveries_per_run)) {
        LOOM_LOG(WARNING) << "An error was raised, possibly a preemption; recreating the "
                          << "session and restoring the latest checkpoint: " << e.what();
        ++recoveries;
        session_.reset();
        continue;
      }
      failed_ = true;
      throw;
    } catch (...) {
      failed_ = true;
      throw;
    }
  }
}

std::vector<Tensor> MonitoredSession::Run(const FeedList& feeds, const std::vector<Output>& fetches,
                                          const std::vector<Operation>& targets) {
  SessionRunArgs args{.fetches = fetches, .feeds = feeds, .targets = targets};
  return RunWithRecovery([&](Session& session) { return HookedRun(session, args); });
}

std::vector<Tensor> MonitoredSession::RunStep(const RunStepFn& step_fn) {
  return RunWithRecovery([&](Session& session) {
    StepContext context(*this, session);
    std::vector<Tensor> out = step_fn(context);
    if (context.stop_requested_) should_stop_ = true;
    return out;
  });
}

void MonitoredSession::Close() {
  if (closed_) return;
  closed_ = true;
  std::unique_ptr<Session> session = std::move(session_);
  if (failed_ || session == nullptr) return;
  for (auto& hook : hooks_) hook->End(*session);
}

std::unique_ptr<MonitoredSession> SingularMonitoredSession(Graph& graph, HookList hooks,
                                                           SessionCreatorOptions options) {
  return std::make_unique<MonitoredSession>(NewSessionCreator(graph, std::move(options)),
                                            std::move(hooks),
                                            MonitoredSessionOptions{.should_recover = false});
}

}  // namespace loom::train
