// The host launch of one gemv_nt candidate (appended to its CUDA source and
// host.h):
//   prog GRID_X GRID_Y THREADS N K HAS_BIAS X W BIAS Y OUT_ELEMENTS
// runs every block with one fiber per CUDA thread and writes y, whose
// elements start as NaN so that unwritten ones fail verification. BIAS is
// "-" when the case has none (the kernel then never reads it).
int main(int argc, char** argv) {
  if (argc != 12) { std::fprintf(stderr, "usage: GX GY THREADS N K HAS_BIAS X W BIAS Y OUTLEN\n"); return 2; }
  const int gx = std::atoi(argv[1]), gy = std::atoi(argv[2]), nt = std::atoi(argv[3]);
  const int n = std::atoi(argv[4]), k = std::atoi(argv[5]), has_bias = std::atoi(argv[6]);
  const long out = std::atol(argv[11]);
  const T* x = kt_load(argv[7]);
  const T* w = kt_load(argv[8]);
  const T* bias = std::strcmp(argv[9], "-") == 0 ? x : kt_load(argv[9]);
  T* y = kt_output(out);
  kt_launch(gx, gy, nt, [=] { KT_KERNEL(x, w, bias, y, n, k, has_bias); });
  return kt_write(argv[10], y, out);
}
