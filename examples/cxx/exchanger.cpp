// A C++ program whose MPI calls sit in class methods, templates and a
// namespace, so that their names are mangled in the binary
// (_ZN4halo9Exchanger7receiveEi and kin): the profiler must show them as a
// C++ programmer writes them.
//
// Rank pairs (0, 1), (2, 3), ...: the odd rank sleeps `delay_ms` before each
// of `iterations` sends (Late Sender at the even rank's receive in
// halo::Exchanger::receive), then both sum a vector with a templated helper
// that calls MPI_Allreduce.
//
// The odd rank reports on stderr what it actually slept:
// "exchanger: rank 1 injected 200.4 ms".
//
// usage: exchanger [iterations=10] [delay_ms=20]
#include <mpi.h>

#include <vector>

#include "../common.h"

namespace halo {

class Exchanger {
  public:
    Exchanger(MPI_Comm comm, int peer) : comm_(comm), peer_(peer), buf_(16, 0.0) {}

    // noinline: the calls must stay in these methods under -O2, as they do in
    // a real code's separately compiled classes.
    __attribute__((noinline)) void send(int step)
    {
        buf_[0] = step;
        MPI_Send(buf_.data(), (int)buf_.size(), MPI_DOUBLE, peer_, step, comm_); /* MPIOVER-EXPECT: cxx-send */
        sent_++;
    }

    __attribute__((noinline)) double receive(int step)
    {
        MPI_Recv(buf_.data(), (int)buf_.size(), MPI_DOUBLE, peer_, step, comm_, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: cxx-recv */
        received_++;
        return buf_[0];
    }

    long messages() const { return sent_ + received_; }

  private:
    MPI_Comm comm_;
    int peer_;
    std::vector<double> buf_;
    long sent_ = 0, received_ = 0;
};

template <typename T> __attribute__((noinline)) T global_sum(T v, MPI_Datatype type)
{
    T out{};
    MPI_Allreduce(&v, &out, 1, type, MPI_SUM, MPI_COMM_WORLD); /* MPIOVER-EXPECT: cxx-allreduce */
    return out;
}

} // namespace halo

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 10);
    int delay_ms = arg_int(argc, argv, 2, 20);
    int rank, size;
    double injected = 0, sum = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (peer < size) {
        halo::Exchanger x(MPI_COMM_WORLD, peer);
        for (int i = 0; i < iters; i++) {
            if (rank % 2 == 1) {
                injected += timed_sleep_ms(delay_ms);
                x.send(i);
            } else {
                sum += x.receive(i);
            }
        }
        if (rank % 2 == 1)
            report_injected("exchanger", rank, injected);
    }
    double total = halo::global_sum<double>(sum, MPI_DOUBLE);
    long ranks = halo::global_sum<long>(1, MPI_LONG);
    if (rank == 0)
        printf("exchanger: ranks %ld iterations %d delay_ms %d checksum %.1f\n", ranks, iters,
               delay_ms, total);
    MPI_Finalize();
    return 0;
}
