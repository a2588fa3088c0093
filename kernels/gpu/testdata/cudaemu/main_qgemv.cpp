// The host launch of one qgemv candidate (appended to its CUDA source and
// host.h):
//   prog GRID_X GRID_Y THREADS N K BITS GROUPS GSHIFT HAS_BIAS M X W SCALES BIASES BIAS Y OUT_ELEMENTS
// runs every block with one fiber per CUDA thread and writes y, whose
// elements start as NaN so that unwritten ones fail verification. W holds
// the packed uint32 words; BIAS is "-" when the case has none (the kernel
// then never reads it).
int main(int argc, char** argv) {
  if (argc != 18) { std::fprintf(stderr, "usage: GX GY THREADS N K BITS GROUPS GSHIFT HAS_BIAS M X W SCALES BIASES BIAS Y OUTLEN\n"); return 2; }
  const int gx = std::atoi(argv[1]), gy = std::atoi(argv[2]), nt = std::atoi(argv[3]);
  const int n = std::atoi(argv[4]), k = std::atoi(argv[5]), bits = std::atoi(argv[6]);
  const int groups = std::atoi(argv[7]), gshift = std::atoi(argv[8]), has_bias = std::atoi(argv[9]);
  const int m = std::atoi(argv[10]);
  const long out = std::atol(argv[17]);
  const T* x = kt_load(argv[11]);
  const unsigned* w = (const unsigned*)kt_load(argv[12]);
  const T* scales = kt_load(argv[13]);
  const T* biases = kt_load(argv[14]);
  const T* bias = std::strcmp(argv[15], "-") == 0 ? x : kt_load(argv[15]);
  T* y = kt_output(out);
  kt_launch(gx, gy, nt, [=] { KT_KERNEL(x, w, scales, biases, bias, y, n, k, bits, groups, gshift, has_bias, m); });
  return kt_write(argv[16], y, out);
}
