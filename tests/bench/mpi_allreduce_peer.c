/* mpi_allreduce_peer: Open MPI's MPI_Allreduce (float32, sum, in place) timed at the sizes given,
 * for bench_allreduce --shared-memory. Run under mpirun; on one host Open MPI moves the data
 * through its shared-memory transport (vader). Each repetition starts after a barrier and counts
 * the slowest rank's time. Rank 0 prints one line per size:
 *   MPI size=<bytes> best_s=<seconds> median_s=<seconds>
 * Usage: mpi_allreduce_peer SIZE_BYTES,... REPS,...   (one REPS per size) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char* text, long* out, int most) {
  int n = 0;
  char* copy = strdup(text);
  for (char* item = strtok(copy, ","); item && n < most; item = strtok(NULL, ",")) {
    out[n++] = strtol(item, NULL, 10);
  }
  free(copy);
  return n;
}

static int byValue(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long sizes[64], reps[64];
  const int n = argc > 2 ? parse(argv[1], sizes, 64) : 0;
  if (n == 0 || parse(argv[2], reps, 64) != n) {
    if (rank == 0) fprintf(stderr, "usage: %s SIZE_BYTES,... REPS,...\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long largest = 0;
  for (int s = 0; s < n; ++s) largest = sizes[s] > largest ? sizes[s] : largest;
  float* data = calloc((size_t)largest / sizeof(float) + 1, sizeof(float));
  for (int s = 0; s < n; ++s) {
    const int count = (int)(sizes[s] / (long)sizeof(float));
    double* times = calloc((size_t)reps[s], sizeof(double));
    for (int i = 0; i < 3; ++i) {  // warm-up
      MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    for (long r = 0; r < reps[s]; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double took = MPI_Wtime() - start, slowest = 0;
      MPI_Allreduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      times[r] = slowest;
    }
    if (rank == 0) {
      qsort(times, (size_t)reps[s], sizeof(double), byValue);
      printf("MPI size=%ld best_s=%.9f median_s=%.9f\n", sizes[s], times[0], times[reps[s] / 2]);
      fflush(stdout);
    }
    free(times);
  }
  free(data);
  MPI_Finalize();
  return 0;
}
