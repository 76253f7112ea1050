// Index values of the gather and scatter families, read on the device (the templates load
// them from their index binding) and mapped into their axis.
// The engine defines INDEX_ST / INDEX_CT / INDEX_LOAD (the index dtype: 8 to 64-bit,
// signed or not), INDEX_SIGNED, and CLAMP:
//   CLAMP 0 ("fill"): a negative value counts from the end (adds the axis size, as MLX);
//     the value is valid when the window it starts fits the axis: 0 <= v <= limit.
//   CLAMP 1 ("clamp", slicing at an array start): v is clamped into [0, limit].
// The comparison runs in the index's own type (64-bit ones in 64 bits), so no value wraps
// into range.
#ifndef MLX_INDEX_VALUES_GLSL
#define MLX_INDEX_VALUES_GLSL

#ifndef INDEX_ST
#define INDEX_ST int
#define INDEX_CT int
#define INDEX_LOAD(x) (x)
#define INDEX_SIGNED 1
#endif
#ifndef CLAMP
#define CLAMP 0
#endif

// Index value r mapped into its axis, in [0, limit] when it returns true.
bool resolve_index(INDEX_CT r, IDX_T size, IDX_T limit, out IDX_T v) {
  v = IDX_T(0);
  if (limit < IDX_T(0)) {
    return false;  // no window fits (an empty axis)
  }
#if CLAMP
#if INDEX_SIGNED
  r = clamp(r, INDEX_CT(0), INDEX_CT(limit));
#else
  r = min(r, INDEX_CT(limit));
#endif
  v = IDX_T(r);
  return true;
#else
#if INDEX_SIGNED
  if (r < INDEX_CT(0)) {
    r += INDEX_CT(size);
  }
  bool ok = r >= INDEX_CT(0) && r <= INDEX_CT(limit);
#else
  bool ok = r <= INDEX_CT(limit);
#endif
  if (ok) {
    v = IDX_T(r);
  }
  return ok;
#endif
}

#endif
