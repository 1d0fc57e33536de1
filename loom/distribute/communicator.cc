#include "loom/distribute/communicator.h"

#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "loom/base/check.h"
#include "loom/base/error.h"

namespace loom::distribute {
namespace {

// Sums src into dst elementwise.
template <typename T>
void AddInto(T* dst, const T* src, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] += src[i];
}

void AddInto(DType dtype, void* dst, const void* src, int64_t count) {
  switch (dtype) {
    case kFloat32:
      return AddInto(static_cast<float*>(dst), static_cast<const float*>(src), count);
    case kFloat64:
      return AddInto(static_cast<double*>(dst), static_cast<const double*>(src), count);
    case kInt32:
      return AddInto(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count);
    case kInt64:
      return AddInto(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count);
    default:
      throw InvalidArgument("AllReduceSum: dtype ", DTypeName(dtype),
                            " is not summed; use float32, float64, int32 or int64");
  }
}

// What the ranks of one in-process job share: each rank publishes a pointer in its slot,
// and three barrier phases order publish / read / reuse.
struct InProcessJob {
  explicit InProcessJob(int n) : size(n), barrier(n), slots(n), sizes(n) {}
  int size;
  std::barrier<> barrier;
  std::vector<const void*> slots;
  std::vector<int64_t> sizes;
};

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessJob> job, int rank)
      : job_(std::move(job)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return job_->size; }
  int local_rank() const override { return rank_; }
  int local_size() const override { return job_->size; }

  void AllReduceSum(DType dtype, void* data, int64_t count) override {
    const size_t bytes = static_cast<size_t>(count) * DTypeSize(dtype);
    job_->slots[rank_] = data;
    job_->sizes[rank_] = count;
    job_->barrier.arrive_and_wait();
    for (int r = 0; r < job_->size; ++r) {
      LOOM_CHECK_EQ(job_->sizes[r], count) << "AllReduceSum: ranks disagree on the count";
    }
    // Every rank sums in rank order into its own scratch, so all get the same bits.
    std::vector<char> sum(static_cast<const char*>(job_->slots[0]),
                          static_cast<const char*>(job_->slots[0]) + bytes);
    for (int r = 1; r < job_->size; ++r) AddInto(dtype, sum.data(), job_->slots[r], count);
    job_->barrier.arrive_and_wait();  // nobody writes before everyone has read
    if (bytes > 0) std::memcpy(data, sum.data(), bytes);
    job_->barrier.arrive_and_wait();  // slots free for the next collective
  }

  std::vector<std::string> AllGather(std::string_view bytes) override {
    job_->slots[rank_] = bytes.data();
    job_->sizes[rank_] = static_cast<int64_t>(bytes.size());
    job_->barrier.arrive_and_wait();
    std::vector<std::string> result(job_->size);
    for (int r = 0; r < job_->size; ++r) {
      result[r].assign(static_cast<const char*>(job_->slots[r]), job_->sizes[r]);
    }
    job_->barrier.arrive_and_wait();
    return result;
  }

  void Broadcast(void* data, int64_t bytes, int root) override {
    LOOM_CHECK(root >= 0 && root < job_->size) << "Broadcast: bad root " << root;
    job_->slots[rank_] = data;
    job_->sizes[rank_] = bytes;
    job_->barrier.arrive_and_wait();
    LOOM_CHECK_EQ(job_->sizes[root], bytes) << "Broadcast: ranks disagree on the size";
    if (rank_ != root && bytes > 0) std::memcpy(data, job_->slots[root], bytes);
    job_->barrier.arrive_and_wait();
  }

  [[noreturn]] void Abort(int exit_code, std::string_view reason) override {
    std::fprintf(stderr, "loom: rank %d of %d aborts the job: %.*s\n", rank_, job_->size,
                 static_cast<int>(reason.size()), reason.data());
    std::fflush(stderr);
    std::_Exit(exit_code);
  }

 private:
  std::shared_ptr<InProcessJob> job_;
  int rank_;
};

}  // namespace

bool AnyRank(Communicator& comm, bool value) {
  int64_t flag = value ? 1 : 0;
  comm.AllReduceSum(kInt64, &flag, 1);
  return flag > 0;
}

void BroadcastString(Communicator& comm, std::string& value, int root) {
  int64_t size = BroadcastInt(comm, static_cast<int64_t>(value.size()), root);
  value.resize(size);
  comm.Broadcast(value.data(), size, root);
}

int64_t BroadcastInt(Communicator& comm, int64_t value, int root) {
  comm.Broadcast(&value, sizeof value, root);
  return value;
}

std::vector<std::shared_ptr<Communicator>> InProcessCommunicators(int n) {
  LOOM_CHECK_GE(n, 1) << "InProcessCommunicators: n must be >= 1";
  auto job = std::make_shared<InProcessJob>(n);
  std::vector<std::shared_ptr<Communicator>> ranks;
  ranks.reserve(n);
  for (int r = 0; r < n; ++r) {
    ranks.push_back(WithCommunicationThread(std::make_shared<InProcessCommunicator>(job, r)));
  }
  return ranks;
}

bool LaunchedByMpi() {
  // Open MPI's mpirun, MPICH/Hydra's mpiexec, and Slurm's srun with PMI/PMIx.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace loom::distribute
