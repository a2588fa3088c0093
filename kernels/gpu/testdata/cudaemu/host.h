// The host side that every launch (main.cpp, main_lora.cpp) shares, placed
// after the candidate's source (which defines T) and before the launch.
static std::vector<unsigned char> kt_read(const char* path, size_t* n) {
  FILE* f = std::fopen(path, "rb");
  if (!f) { std::perror(path); std::exit(2); }
  std::fseek(f, 0, SEEK_END);
  *n = (size_t)std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  std::vector<unsigned char> b(*n);
  if (std::fread(b.data(), 1, *n, f) != *n) { std::perror(path); std::exit(2); }
  std::fclose(f);
  return b;
}

// kt_load reads an operand into a 64-byte aligned buffer, with slack past
// its end as a device allocation has.
static const T* kt_load(const char* path) {
  size_t n;
  std::vector<unsigned char> b = kt_read(path, &n);
  void* p = std::aligned_alloc(64, (n + 63) / 64 * 64 + 64);
  std::memcpy(p, b.data(), n);
  return (const T*)p;
}

// kt_output is the output of out elements, each a NaN so that unwritten
// ones fail verification.
static T* kt_output(long out) {
  T* y = (T*)std::aligned_alloc(64, (out * sizeof(T) + 63) / 64 * 64 + 64);
  for (long i = 0; i < out; ++i) {
    if (sizeof(T) == 2) { unsigned short h = 0x7e00; std::memcpy(y + i, &h, 2); }
    else { unsigned u = 0x7fc00000u; std::memcpy(y + i, &u, 4); }
  }
  return y;
}

// kt_launch runs every block of a gx × gy grid in turn, with one fiber
// per CUDA thread of nt, each calling body.
template <class F> static void kt_launch(int gx, int gy, int nt, F body) {
  if (nt > kt_max_threads) { std::fprintf(stderr, "%d threads a block: over %d\n", nt, kt_max_threads); std::exit(2); }
  kt_warps.resize((nt + 31) / 32);
  for (auto& wp : kt_warps) wp.bar = new kt_barrier(32);
  kt_barrier block(nt);
  kt_block_barrier = &block;
  kt_nthreads = nt;
  kt_body = body;
  for (int gyi = 0; gyi < gy; ++gyi) {
    for (int gxi = 0; gxi < gx; ++gxi) {
      blockIdx = {(unsigned)gxi, (unsigned)gyi, 0};
      kt_run_block(nt);
    }
  }
}

// kt_write writes the out elements of y to path; the exit status of main.
static int kt_write(const char* path, const T* y, long out) {
  FILE* f = std::fopen(path, "wb");
  if (!f || std::fwrite(y, sizeof(T), out, f) != (size_t)out) { std::perror(path); return 2; }
  std::fclose(f);
  return 0;
}
