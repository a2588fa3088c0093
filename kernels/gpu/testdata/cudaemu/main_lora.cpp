// The host launch of one lora candidate (appended to its CUDA source and
// host.h):
//   prog GRID_X GRID_Y THREADS M N K R HAS_BIAS SCALE X W A B BIAS Y OUT_ELEMENTS
// runs every block with one fiber per CUDA thread and writes y, whose
// elements start as NaN so that unwritten ones fail verification. BIAS is
// "-" when the case has none (the kernel then never reads it).
int main(int argc, char** argv) {
  if (argc != 17) { std::fprintf(stderr, "usage: GX GY THREADS M N K R HAS_BIAS SCALE X W A B BIAS Y OUTLEN\n"); return 2; }
  const int gx = std::atoi(argv[1]), gy = std::atoi(argv[2]), nt = std::atoi(argv[3]);
  const int m = std::atoi(argv[4]), n = std::atoi(argv[5]), k = std::atoi(argv[6]), r = std::atoi(argv[7]);
  const int has_bias = std::atoi(argv[8]);
  const float scale = (float)std::atof(argv[9]);
  const long out = std::atol(argv[16]);
  const T* x = kt_load(argv[10]);
  const T* w = kt_load(argv[11]);
  const T* a = kt_load(argv[12]);
  const T* b = kt_load(argv[13]);
  const T* bias = std::strcmp(argv[14], "-") == 0 ? x : kt_load(argv[14]);
  T* y = kt_output(out);
  kt_launch(gx, gy, nt, [=] { KT_KERNEL(x, w, a, b, bias, y, m, n, k, r, has_bias, scale); });
  return kt_write(argv[15], y, out);
}
