// The host launch of one GEMM candidate (appended to its CUDA source and
// host.h):
//   prog GRID_X GRID_Y THREADS M N K A.bin B.bin C.bin OUT_ELEMENTS
// runs every block with one fiber per CUDA thread and writes C, whose
// elements start as NaN so that unwritten ones fail verification.
int main(int argc, char** argv) {
  if (argc != 11) { std::fprintf(stderr, "usage: GX GY THREADS M N K A B C OUTLEN\n"); return 2; }
  const int gx = std::atoi(argv[1]), gy = std::atoi(argv[2]), nt = std::atoi(argv[3]);
  const int M = std::atoi(argv[4]), N = std::atoi(argv[5]), K = std::atoi(argv[6]);
  const long out = std::atol(argv[10]);
  const T* A = kt_load(argv[7]);
  const T* B = kt_load(argv[8]);
  T* C = kt_output(out);
  kt_launch(gx, gy, nt, [=] { KT_KERNEL(A, B, C, M, N, K); });
  return kt_write(argv[9], C, out);
}
