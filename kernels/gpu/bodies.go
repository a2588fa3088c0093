package gpu

import (
	"fmt"
	"sort"

	"github.com/kerntune/kerntune/internal/registry"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
)

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// rowSegmentHead starts the bodies that give each row of a rows×cols matrix
// a segment of TPR threads, RPB rows per threadgroup: the thread's segment
// and lane, its row (live when in range), the row's base, the stride of a
// segment's VEC-wide accesses, and the scratch of segment reductions.
const rowSegmentHead = `
  const int seg = LID / TPR, sl = LID % TPR;
  const int row = GROUP_X * RPB + seg;
  const bool live = row < rows;
  const int base = live ? row * cols : 0;
  const int step = TPR * VEC;
  SHARED(float, red, NTHREADS);
`

// rowKeepLoad (KEEP=1, a row that fits one pass) reads the thread's VEC-wide
// pieces of its row into v[UNROLL][VEC], once (streaming: nothing reads
// them again); the passes that follow use them where sl·VEC + u·step < cols.
const rowKeepLoad = `  float v[UNROLL][VEC];
  if (live && KEEP) {
    UNROLL_LOOP
    for (int u = 0; u < UNROLL; ++u)
      if (sl * VEC + u * step < cols) LOADV_STREAM(x, base + sl * VEC + u * step, v[u]);
  }
`

// rowBody is the body of a row-wise family (softmax, rmsnorm): a segment
// of TPR threads per row, RPB rows per threadgroup.
func rowBody(family, fn, src string, args []Arg, scalars func(c kernels.Case, consts map[string]float64) []any) *Body {
	return &Body{
		Family: family, Func: fn, Args: args, Source: src,
		Defines: func(p map[string]int) map[string]int {
			return map[string]int{"NTHREADS": p["TPR"] * p["RPB"], "KEEP": p["KEEP"]}
		},
		SharedBytes: func(p map[string]int) int { return 4 * p["TPR"] * p["RPB"] },
		Geometry: func(shape []int, p map[string]int) Launch {
			return Launch{Grid: [2]int{ceilDiv(shape[0], p["RPB"]), 1}, Threads: p["TPR"] * p["RPB"]}
		},
		Scalars: scalars,
	}
}

// bodies holds the built-in families' bodies by name. Each family adds its
// own with AddBuiltin from an init (a new family from its own folder,
// family/NAME), so no list here names them.
var bodies = map[string]*Body{}

// AddBuiltin adds the body of a built-in family (params/families, or a
// family's own folder, family/NAME, which calls it from its init). A name
// that is not a built-in family, or one added twice, is a programming
// error: it panics, so every test and run fails at once.
func AddBuiltin(b *Body) {
	if _, ok := families.Builtin()[b.Family]; !ok {
		panic(fmt.Sprintf("gpu: body for %q, which is not a built-in family", b.Family))
	}
	if _, dup := bodies[b.Family]; dup {
		panic(fmt.Sprintf("gpu: body for %q added twice", b.Family))
	}
	bodies[b.Family] = b
}

// registered holds the bodies of user-defined kernels (kernel spec files),
// added by Register so that every GPU backend finds them by name.
var registered registry.Map[*Body]

// Register adds the body of a user-defined kernel, named by b.Family; a
// built-in family's name is refused, the same name again replaces it.
func Register(b *Body) error {
	if b == nil || b.Family == "" {
		return fmt.Errorf("gpu.Register: body without a family name")
	}
	_, builtin := bodies[b.Family]
	return registered.Add(b.Family, builtin, b)
}

// Get returns the body of a family: built in or registered.
func Get(family string) (*Body, error) {
	b, ok := bodies[family]
	if !ok {
		b, ok = registered.Get(family)
	}
	if !ok {
		return nil, fmt.Errorf("no GPU kernel body for %q", family)
	}
	return b, nil
}

// Source is the body of a family (as Get) and the source it generates for
// candidate p in an API and dtype (as Body.SourceFor).
func Source(family string, api API, dt kernels.DType, p map[string]int) (*Body, string, error) {
	b, err := Get(family)
	if err != nil {
		return nil, "", err
	}
	src, err := b.SourceFor(api, dt, p)
	if err != nil {
		return nil, "", err
	}
	return b, src, nil
}

// Families lists the built-in families that have a body.
func Families() []string {
	var names []string
	for n := range bodies {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
