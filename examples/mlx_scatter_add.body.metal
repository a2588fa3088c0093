// Each thread adds ITEMS consecutive elements into the bins: the sum of
// their values and their count. Atomic adds make the result independent
// of the order threads run in, up to float rounding of the sums.
uint first = thread_position_in_grid.x * ITEMS;
uint n = dims[0];
for (uint j = 0; j < ITEMS; ++j) {
  uint e = first + j;
  if (e >= n) {
    return;
  }
  int b = idx[e];
  atomic_fetch_add_explicit(&sums[b], vals[e], memory_order_relaxed);
  atomic_fetch_add_explicit(&counts[b], 1, memory_order_relaxed);
}
