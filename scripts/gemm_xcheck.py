"""Cross-checks kerntune's CUDA GEMM bodies on a GPU machine that has CuPy and
PyTorch but no kerntune binary: the generated sources (the per-candidate
#defines in front of the template that `go run ./scripts/gemmsrc DIR` writes,
the same text kerntune compiles) are compiled with NVRTC through CuPy,
verified against a float64 reference with the output NaN-poisoned, and timed
with CUDA graph replays against cuBLAS (torch.matmul, TF32 off) in the same
run.

  python3 scripts/gemm_xcheck.py DIR all [SEED]   verify every MMA=1 candidate
                                                  (f16, f32 on TF32) and a SIMT
                                                  sample, then the target sweeps
  python3 scripts/gemm_xcheck.py DIR quick        one candidate at 512x4864x896
  python3 scripts/gemm_xcheck.py DIR one PARAMS_JSON DTYPE MxNxK
                                                  three launches, for a profiler
  python3 scripts/gemm_xcheck.py DIR ncucmds OUT  Nsight Compute command lines
                                                  for the winners in DIR/best.json

The candidate rules below mirror the CUDA backend's (kernels/gpu
GemmFragment, the H100's 227 KiB of shared memory per block); the Go test
TestGemmXcheckMatchesGo keeps them and the generated text in step.
"""
import sys, json, itertools, random, time
try:
    import cupy as cp, numpy as np
except ImportError:  # source generation and the candidate rules work without them
    cp = np = None
D = (sys.argv[1].rstrip('/') + '/') if len(sys.argv) > 1 else './'
T = {}
OPT = ('--std=c++17', '-default-device')
OPTIN = 232448


def templates():
    if not T:
        T.update(f16=open(D + 't16.cu').read(), f32=open(D + 't32.cu').read())
    return T


def nth(p):
    return 32 * p['WM'] * p['WN'] * p['KS'] if p['MMA'] else (p['BM'] // p['TM']) * (p['BN'] // p['TN'])


def frag(dt):
    return (16, 16, 16, 2, 8, 8, 8) if dt == 'f16' else (16, 16, 8, 4, 4, 8, 8)


def full(p):
    d = dict(TM=1, TN=1, PAD=0, WM=1, WN=1, STAGES=1, TF32=0, MMA=0, KS=1)
    d.update(p)
    return d


def dyn(p, dt, tr):
    p = full(p)
    if not p['MMA']:
        return 0
    fm, fn, fk, sb, pa, pat, pb = frag(dt)
    a = p['BK'] * (p['BM'] + pat) if tr else p['BM'] * (p['BK'] + pa)
    ring = p['STAGES'] * (a + p['BK'] * (p['BN'] + pb)) * sb
    # KS > 1: the KS float partial tiles reuse the ring
    return max(ring, p['KS'] * p['BM'] * (p['BN'] + 8) * 4) if p['KS'] > 1 else ring


def src(p, dt, tr):
    d = full(p)
    d.update(NTHREADS=nth(d), A_TRANS=tr, VEC=4)
    if d['MMA']:
        fm, fn, fk, sb, pa, pat, pb = frag(dt)
        d.update(FRAG_M=fm, FRAG_N=fn, FRAG_K=fk, SPAD_A=pat if tr else pa, SPAD_B=pb, FRAG_SCRATCH=1)
    s = ''.join('#define %s %d\n' % kv for kv in sorted(d.items())) + templates()[dt]
    return s.replace('kt_gemm_av', 'kt_gemm_at_b') if tr else s


def comp(a):
    p, dt, tr = a
    try:
        cp.RawModule(code=src(p, dt, tr), options=OPT).compile()
        return None
    except Exception as e:
        return str(e)[-400:]


MODS = {}


def kern(p, dt, tr):
    k = (json.dumps(p, sort_keys=True), dt, tr)
    if k not in MODS:
        f = cp.RawModule(code=src(p, dt, tr), options=OPT).get_function('kt_gemm_at_b' if tr else 'kt_gemm_av')
        dy = dyn(p, dt, tr)
        if dy > 48 * 1024:
            f.max_dynamic_shared_size_bytes = dy
        MODS[k] = (f, dy)
    return MODS[k]


def launcher(p, dt, tr, A, B, C, M, N, K):
    f, dy = kern(p, dt, tr)
    g = ((N + p['BN'] - 1) // p['BN'], (M + p['BM'] - 1) // p['BM'])
    args = (A, B, C, np.int32(M), np.int32(N), np.int32(K))
    b = (nth(full(p)),)
    return lambda: f(g, b, args, shared_mem=dy)


def data(dt, tr, shape, seed):
    m, n, k = shape
    rs = cp.random.RandomState(seed)
    ty = cp.float16 if dt == 'f16' else cp.float32
    if tr:
        A = rs.uniform(-1, 1, (m, n)).astype(ty); B = rs.uniform(-1, 1, (m, k)).astype(ty); M, N, K = n, k, m
    else:
        A = rs.uniform(-1, 1, (m, k)).astype(ty); B = rs.uniform(-1, 1, (k, n)).astype(ty); M, N, K = m, n, k
    return A, B, M, N, K


def ref(A, B, tr):
    a, b = A.astype(cp.float64), B.astype(cp.float64)
    return a.T @ b if tr else a @ b


DC = {}


def check(p, dt, tr, shape, seed, R=None):
    key = (dt, tr, shape, seed)
    if R is None and key not in DC:
        A, B, M, N, K = data(dt, tr, shape, seed)
        DC[key] = (A, B, M, N, K, ref(A, B, tr))
    if R is None:
        A, B, M, N, K, R = DC[key]
    else:
        A, B, M, N, K = data(dt, tr, shape, seed)
    C = cp.full((M, N), cp.nan, dtype=A.dtype)
    launcher(p, dt, tr, A, B, C, M, N, K)()
    c = C.astype(cp.float64)
    if not bool(cp.isfinite(c).all()):
        return 'unwritten or non-finite on %s' % (shape,)
    r = R
    e = float(cp.linalg.norm(c - r) / cp.linalg.norm(r))
    tol = 1e-3 if (dt == 'f16' or p.get('TF32')) else 1e-5
    return None if e <= tol else 'rel error %.3g > %g on %s' % (e, tol, shape)


def gtime(fn, reps, trials=7):
    import torch
    s = torch.cuda.Stream()
    mode = 'graph'
    with torch.cuda.stream(s), cp.cuda.ExternalStream(s.cuda_stream):
        fn(); s.synchronize()
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=s):
                with cp.cuda.ExternalStream(s.cuda_stream):
                    for _ in range(reps):
                        fn()
            run = g.replay
        except Exception as e:
            mode = 'loop (%s)' % str(e)[:60]
            run = lambda: [fn() for _ in range(reps)]
        run(); s.synchronize()
        ts = []
        for _ in range(trials):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(s); run(); b.record(s); b.synchronize()
            ts.append(a.elapsed_time(b) * 1000 / reps)
    return float(np.median(ts)), mode


def grid(ks, vs):
    return [dict(zip(ks, v)) for v in itertools.product(*vs)]


def mma_cands(dt, tr):
    out = []
    for BM, BN, BK, WM, WN, S, KS in itertools.product([32, 48, 64, 128], [32, 48, 64, 128, 256], [8, 16, 24, 32, 64], [1, 2, 4], [1, 2, 4], [1, 2, 3, 4], [1, 2, 4]):
        if BM % (16 * WM) or BN % (16 * WN) or (BM // WM) * (BN // WN) > 4096 or BK % ((16 if dt == 'f16' else 8) * KS) or WM * WN * KS > 16:
            continue
        p = dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, STAGES=S, MMA=1, TF32=int(dt == 'f32'), KS=KS)
        if dyn(p, dt, tr) + (4 if KS > 1 else 4 * WM * WN) <= OPTIN:
            out.append(p)
    return out


def simt_ok(p):
    p = full(p)
    t = (p['BM'] // p['TM']) * (p['BN'] // p['TN'])
    return 32 <= t <= 1024 and p['STAGES'] * p['BK'] * (p['BM'] + p['BN'] + 2 * p['PAD']) <= 12288


def sweep(name, dt, shape, cands, reps):
    import torch
    A, B, M, N, K = data(dt, 0, shape, 1)
    R = ref(A, B, 0)
    C = cp.empty((M, N), dtype=A.dtype)
    ta, tb_, tc = torch.from_dlpack(A), torch.from_dlpack(B), torch.empty((M, N), dtype=torch.float16 if dt == 'f16' else torch.float32, device='cuda')
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    tb, mb = gtime(lambda: torch.matmul(ta, tb_, out=tc), reps)
    e = float(cp.linalg.norm(cp.from_dlpack(tc).astype(cp.float64) - R) / cp.linalg.norm(R))
    rows = []
    modes = set()
    for p in cands:
        try:
            err = check(p, dt, 0, shape, 1, R)
            if err:
                print('  FAIL', p, err); continue
            t, m = gtime(launcher(p, dt, 0, A, B, C, M, N, K), reps)
            modes.add(m[:5])
            rows.append((t, p))
        except Exception as ex:
            print('  ERROR', p, str(ex)[-200:])
    rows.sort(key=lambda r: r[0])
    fl = 2.0 * shape[0] * shape[1] * shape[2]
    print('== %s %s %s: cuBLAS %.2f us (%s, %.1f TFLOP/s, rel err %.2g); %d candidates timed %s' % (name, dt, shape, tb, mb, fl / tb / 1e6, e, len(rows), sorted(modes)))
    for t, p in rows[:6]:
        print('  %.2f us  %.1f TFLOP/s  speed vs cuBLAS %.3f  %s' % (t, fl / t / 1e6, tb / t, json.dumps(p, sort_keys=True)))
    if rows:
        RES.append((name, dt, shape, rows[0][0], tb, rows[0][1], len(rows)))
    sys.stdout.flush()


RES = []
ODD = {0: [(37, 53, 29), (1, 19, 300), (130, 7, 65), (72, 88, 40), (136, 200, 96)],
       1: [(37, 53, 29), (300, 1, 19), (7, 130, 65), (40, 72, 88), (96, 136, 200)]}


def main():
    mode = sys.argv[2]
    big = [(128, 128, 2, 2), (128, 128, 2, 4), (128, 128, 4, 2), (128, 256, 2, 4), (128, 256, 4, 2), (256, 128, 4, 2), (64, 128, 2, 2), (128, 64, 2, 2), (64, 64, 2, 2), (64, 256, 1, 4), (128, 256, 2, 2)]
    f16 = [dict(BM=a, BN=b, WM=c, WN=d, BK=k, STAGES=s, MMA=1) for a, b, c, d in big for k in (32, 64) for s in (2, 3, 4)]
    f16 = [p for p in f16 if p['BM'] in (32, 48, 64, 128) and (p['BM'] // p['WM']) * (p['BN'] // p['WN']) <= 4096 and dyn(p, 'f16', 0) <= OPTIN]
    tf = [dict(p, TF32=1, BK=k) for p in f16 if p['BK'] == 32 and p['STAGES'] in (2, 3) for k in (16, 32) if dyn(dict(p, BK=k), 'f32', 0) <= OPTIN]
    simt = [p for p in grid(['BM', 'BN', 'BK', 'TM', 'TN', 'PAD', 'STAGES'], [[64, 128], [64, 128], [8, 16], [4, 8], [4, 8], [0, 4], [1, 2]]) if simt_ok(p)]
    if mode == 'quick':
        sweep('hgemm', 'f16', (512, 4864, 896), [dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=4, MMA=1)], 40)
        return
    sample = []
    rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    allf16 = mma_cands('f16', 0)
    for dt in ('f16', 'f32'):
        for tr in (0, 1):
            cs = mma_cands(dt, tr)
            print('MMA candidates', dt, 'at_b' if tr else 'av', len(cs))
            sample += [(p, dt, tr) for p in cs]
    sample += [(p, 'f32', tr) for p in rnd.sample(simt, 20) for tr in (0, 1)] + [(dict(p, PAD=1), 'f16', 1) for p in rnd.sample(simt, 10)]
    work = sample
    from concurrent.futures import ProcessPoolExecutor
    t0 = time.time()
    with ProcessPoolExecutor(16) as ex:
        errs = list(ex.map(comp, work, chunksize=8))
    bad = [(w, e) for w, e in zip(work, errs) if e]
    print('compiled %d kernels in %.0fs, %d failed' % (len(work), time.time() - t0, len(bad)))
    for w, e in bad[:5]:
        print('  COMPILE', w, e)
    t0 = time.time(); nok = 0; nfail = 0; per = {}
    for p, dt, tr in sample:
        key = '%s %s %s' % ('MMA' if p.get('MMA') else 'SIMT', dt + ('/TF32' if p.get('TF32') else ''), 'gemm_at_b' if tr else 'gemm_av')
        per.setdefault(key, [0, 0])[1] += 1
        for i, sh in enumerate(ODD[tr]):
            e = check(p, dt, tr, sh, i + 7)
            if e:
                nfail += 1
                if nfail < 10:
                    print('  VERIFY FAIL', key, json.dumps(p, sort_keys=True), e)
                break
        else:
            nok += 1; per[key][0] += 1
        MODS.clear()
    for k in sorted(per):
        print('  %-28s %d/%d passed' % (k, per[k][0], per[k][1]))
    print('verified %d/%d candidates on 5 shapes each (3 odd, 2 aligned but no tile multiple; NaN-poisoned output) in %.0fs' % (nok, len(sample), time.time() - t0))
    sys.stdout.flush()
    top = [(128, 128, 32, 2, 2, 3), (128, 256, 64, 2, 4, 2), (128, 256, 64, 4, 2, 2), (128, 256, 64, 4, 2, 3), (128, 128, 64, 2, 2, 3), (128, 128, 32, 2, 2, 4),
           (128, 128, 32, 2, 2, 2), (128, 256, 32, 2, 4, 3), (128, 256, 32, 2, 4, 4), (128, 128, 64, 2, 2, 2), (128, 256, 32, 4, 2, 3), (128, 128, 32, 4, 2, 3)]
    top = [dict(BM=a, BN=b, BK=k, WM=c, WN=d, STAGES=e, MMA=1, TF32=0) for a, b, k, c, d, e in top]
    sweep('hgemm', 'f16', (512, 4864, 896), allf16, 40)
    sweep('hgemm', 'f16', (4096, 4096, 4096), [p for p in top if dyn(p, 'f16', 0) <= OPTIN], 10)
    print('== summary (speed = cuBLAS time / tuned time)')
    for name, dt, sh, t, tb, p, n in RES:
        print('%-6s %s %-18s tuned %9.2f us  cuBLAS %9.2f us  speed %.3f  of %d  %s' % (name, dt, 'x'.join(map(str, sh)), t, tb, tb / t, n, json.dumps(p, sort_keys=True)))
    json.dump([dict(name=a, dt=b, shape=list(c), us=d, cublas_us=e, params=f) for a, b, c, d, e, f, g in RES], open(D + 'best.json', 'w'))


def one():
    p = json.loads(sys.argv[3]); dt = sys.argv[4]; sh = tuple(int(x) for x in sys.argv[5].split('x'))
    A, B, M, N, K = data(dt, 0, sh, 1)
    C = cp.empty((M, N), dtype=A.dtype)
    f = launcher(p, dt, 0, A, B, C, M, N, K)
    for _ in range(3):
        f()
    cp.cuda.Device().synchronize()


def ncucmds():
    out = sys.argv[3]
    for x in json.load(open(D + 'best.json')):
        if x['shape'] == [4096, 4096, 4096] and x['name'] in ('hgemm', 'sgemm') or x['shape'] == [512, 4864, 896]:
            tag = '%s-%s' % (x['name'], 'x'.join(map(str, x['shape'])))
            print("ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis "
                  "--section MemoryWorkloadAnalysis --section LaunchStats --section InstructionStats -k regex:kt_gemm -c 1 "
                  "python3 %s %s one '%s' %s %s > %s/ncu-%s.txt 2>&1; grep -E 'Duration|Throughput|Registers|Occupancy|Stall|Issue|Pipe|Bank' %s/ncu-%s.txt | head -30"
                  % (sys.argv[0], D, json.dumps(x['params']), x['dt'], 'x'.join(map(str, x['shape'])), out, tag, out, tag))


if __name__ == '__main__':
    if len(sys.argv) < 3 or sys.argv[2] not in ('all', 'quick', 'one', 'ncucmds'):
        sys.exit(__doc__)
    if cp is None:
        sys.exit('gemm_xcheck.py: CuPy and NumPy are needed to run kernels (pip install cupy-cuda12x or cupy-cuda13x)')
    {'one': one, 'ncucmds': ncucmds}.get(sys.argv[2], main)()
