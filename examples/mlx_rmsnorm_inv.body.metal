// One threadgroup per row: TG threads sum squares (in AccT), meet in
// threadgroup memory, and scale the row. x may be a view: its elements are
// found through x_shape and x_strides with MLX's elem_to_loc, and w may
// be a slice, read through w_strides.
uint row = threadgroup_position_in_grid.x;
uint t = thread_position_in_threadgroup.x;
uint cols = dims[1];
threadgroup AccT part[TG];
AccT ss = 0;
for (uint c = t; c < cols; c += TG) {
  AccT v = AccT(x[elem_to_loc(int64_t(row * cols + c), x_shape, x_strides, x_ndim)]);
  ss += v * v;
}
part[t] = ss;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (t == 0) {
  AccT sum = 0;
  for (uint i = 0; i < TG; ++i) {
    sum += part[i];
  }
  part[0] = metal::rsqrt(sum / AccT(cols) + AccT(eps));
}
threadgroup_barrier(mem_flags::mem_threadgroup);
AccT inv = part[0];
if (t == 0) {
  inv_rms[row] = inv;
}
for (uint c = t; c < cols; c += TG) {
  AccT v = AccT(x[elem_to_loc(int64_t(row * cols + c), x_shape, x_strides, x_ndim)]);
  out[row * cols + c] = static_cast<T>(v * inv * AccT(w[c * w_strides[0]]));
}
