// MpiCommunicator over Open MPI (compiled only when CMake finds MPI; see
// no_mpi_communicator.cc otherwise).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "loom/base/check.h"
#include "loom/base/error.h"
#include "loom/distribute/communicator.h"

namespace loom::distribute {
namespace {

MPI_Datatype MpiType(DType dtype) {
  switch (dtype) {
    case kFloat32:
      return MPI_FLOAT;
    case kFloat64:
      return MPI_DOUBLE;
    case kInt32:
      return MPI_INT32_T;
    case kInt64:
      return MPI_INT64_T;
    default:
      throw InvalidArgument("AllReduceSum: dtype ", DTypeName(dtype),
                            " is not summed; use float32, float64, int32 or int64");
  }
}

// MPI counts are int: a larger buffer goes in chunks of at most this many elements.
constexpr int64_t kMaxChunk = int64_t{1} << 30;

class MpiWorld : public Communicator {
 public:
  explicit MpiWorld(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }

  void AllReduceSum(DType dtype, void* data, int64_t count) override {
    MPI_Datatype type = MpiType(dtype);
    char* p = static_cast<char*>(data);
    const size_t element = DTypeSize(dtype);
    for (int64_t done = 0; done < count;) {
      const int64_t n = std::min(kMaxChunk, count - done);
      MPI_Allreduce(MPI_IN_PLACE, p + done * element, static_cast<int>(n), type, MPI_SUM, comm_);
      done += n;
    }
  }

  std::vector<std::string> AllGather(std::string_view bytes) override {
    LOOM_CHECK_LE(static_cast<int64_t>(bytes.size()), kMaxChunk)
        << "AllGather: more than 1 GiB from one rank";
    int mine = static_cast<int>(bytes.size());
    std::vector<int> sizes(size_), offsets(size_);
    MPI_Allgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm_);
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = static_cast<int>(total);
      total += sizes[r];
    }
    LOOM_CHECK_LE(total, kMaxChunk) << "AllGather: more than 1 GiB in all";
    std::string all(total, '\0');
    MPI_Allgatherv(bytes.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE,
                   comm_);
    std::vector<std::string> result(size_);
    for (int r = 0; r < size_; ++r) result[r] = all.substr(offsets[r], sizes[r]);
    return result;
  }

  void Broadcast(void* data, int64_t bytes, int root) override {
    char* p = static_cast<char*>(data);
    for (int64_t done = 0; done < bytes;) {
      const int64_t n = std::min(kMaxChunk, bytes - done);
      MPI_Bcast(p + done, static_cast<int>(n), MPI_BYTE, root, comm_);
      done += n;
    }
  }

  [[noreturn]] void Abort(int exit_code, std::string_view reason) override {
    std::fprintf(stderr, "loom: rank %d of %d aborts the job: %.*s\n", rank_, size_,
                 static_cast<int>(reason.size()), reason.data());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

bool HaveMpi() { return true; }

std::shared_ptr<Communicator> MpiCommunicator(CommunicationOptions options) {
  // MPI allows one MPI_Init per process; the world is the process's, so it is kept here
  // (the one process-wide object of the layer) and handed out as a shared_ptr.
  static std::once_flag once;
  static std::shared_ptr<Communicator> world;
  static std::string failure;
  std::call_once(once, [&options] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        failure = "MPI_Init_thread failed";
        return;
      }
      if (provided < MPI_THREAD_SERIALIZED) {
        failure = "this MPI library does not support MPI_THREAD_SERIALIZED";
        return;
      }
      std::atexit(FinalizeAtExit);
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    world = WithCommunicationThread(std::make_shared<MpiWorld>(comm), options);
  });
  if (!world) throw Unavailable("MPI could not start: ", failure);
  return world;
}

}  // namespace loom::distribute
