/*
 * A fake CUDA driver + NVRTC + cuBLAS for the cudadrv tests on machines
 * without a GPU. It exports the C symbols cudadrv binds, with the same C
 * signatures, and emulates enough behaviour to check the Go side end to
 * end: argument marshalling through purego (including the 19-argument
 * cublasGemmEx), the kernelParams layout, per-thread current contexts
 * (calls without a current context fail with CUDA_ERROR_INVALID_CONTEXT as
 * the real driver does), sticky errors, JIT logs and NVRTC logs.
 * "Device memory" is host memory; "kernels" are C functions run on launch;
 * the event clock advances 0.010 ms per launch.
 *
 * Built by the tests with: cc -shared -fPIC -o libfakecuda.so fakecuda.c -lm
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static __thread void *cur_ctx = NULL;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized = 0;
static int sticky = 0;
static int primary_refs = 0;
static long long live_allocs = 0;
static long long launches = 0;
static long long live_streams = 0;
static long long live_events = 0;
static long long live_modules = 0;
static int last_stream_flags = -1;
static double clock_ms = 0;
static char last_launch[512];
static int last_math_mode = -1;
static char primary_ctx_storage[16];
/* Stream capture (CUDA graphs): launches while capturing are counted into
 * the graph, not run; a replay advances the clock 0.005 ms per launch. */
static __thread int capturing = 0;
static __thread int captured = 0;
static long long live_graphs = 0;

/* ---------------- test hooks ---------------- */

/* out: live allocations, primary refs, launches, live streams, live events, live modules, last stream flags, last math mode */
int fake_stats(long long *out, int n) {
	long long v[8];
	pthread_mutex_lock(&mu);
	v[0] = live_allocs; v[1] = primary_refs; v[2] = launches; v[3] = live_streams;
	v[4] = live_events; v[5] = live_modules; v[6] = last_stream_flags; v[7] = last_math_mode;
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < n && i < 8; i++) out[i] = v[i];
	return 0;
}

void fake_clear_sticky(void) { sticky = 0; }
/* What cuEventQuery answers: 0 (the event completed) or 600 (not ready). */
static int event_query_result = 0;
void fake_set_event_query(int r) { event_query_result = r; }

const char *fake_last_launch(void) { return last_launch; }
long long fake_live_graphs(void) { return live_graphs; }

/* ---------------- driver: errors and init ---------------- */

static const struct { int code; const char *name, *msg; } errs[] = {
	{0, "CUDA_SUCCESS", "no error"},
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
};

CUresult cuGetErrorName(CUresult e, const char **s) {
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].code == e) { *s = errs[i].name; return 0; }
	*s = NULL;
	return 1;
}

CUresult cuGetErrorString(CUresult e, const char **s) {
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].code == e) { *s = errs[i].msg; return 0; }
	*s = NULL;
	return 1;
}

CUresult cuInit(unsigned int flags) {
	if (getenv("FAKECUDA_NO_DEVICE")) return 100;
	if (flags != 0) return 1;
	initialized = 1;
	return 0;
}

#define NEED_INIT() do { if (!initialized) return 3; } while (0)
#define NEED_CTX() do { NEED_INIT(); if (cur_ctx == NULL) return 201; } while (0)
/* The fake has one device, ordinal 0: any other is CUDA_ERROR_INVALID_DEVICE. */
#define NEED_DEV(d) do { NEED_INIT(); if ((d) != 0) return 101; } while (0)
#define NOT_STICKY() do { if (sticky) return sticky; } while (0)

CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { NEED_INIT(); *n = 1; return 0; }
CUresult cuDeviceGet(int *dev, int ordinal) {
	NEED_DEV(ordinal);
	*dev = 0;
	return 0;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
	NEED_DEV(dev);
	snprintf(name, (size_t)len, "Fake H100 (cudadrv test)");
	return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) {
	NEED_DEV(dev);
	*bytes = (size_t)85520809984ULL;
	return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
	NEED_DEV(dev);
	switch (attr) {
	case 1: *v = 1024; break;      /* max threads per block */
	case 8: *v = 49152; break;     /* shared per block */
	case 10: *v = 32; break;       /* warp */
	case 12: *v = 65536; break;    /* regs per block */
	case 13: *v = 1980000; break;  /* clock kHz */
	case 16: *v = 132; break;      /* SMs */
	case 36: *v = 2619000; break;  /* mem clock kHz */
	case 37: *v = 5120; break;     /* bus width */
	case 38: *v = 52428800; break; /* L2 */
	case 39: *v = 2048; break;     /* threads per SM */
	case 75: *v = 9; break;
	case 76: *v = 0; break;
	case 81: *v = 233472; break;   /* shared per SM */
	case 82: *v = 65536; break;    /* regs per SM */
	case 97: *v = 232448; break;   /* opt-in shared per block */
	case 106: *v = 32; break;      /* blocks per SM */
	case 111: *v = 1024; break;    /* reserved shared */
	default: return 1;
	}
	return 0;
}

/* ---------------- contexts and streams ---------------- */

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
	NEED_DEV(dev);
	pthread_mutex_lock(&mu);
	primary_refs++;
	pthread_mutex_unlock(&mu);
	*ctx = primary_ctx_storage;
	return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
	NEED_DEV(dev);
	pthread_mutex_lock(&mu);
	int r = primary_refs > 0 ? (primary_refs--, 0) : 201;
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuCtxSetCurrent(void *ctx) {
	NEED_INIT();
	if (ctx != NULL && ctx != primary_ctx_storage) return 201;
	cur_ctx = ctx;
	return 0;
}
CUresult cuCtxSynchronize(void) { NEED_CTX(); return sticky; }

CUresult cuStreamCreate(void **s, unsigned int flags) {
	NEED_CTX();
	*s = malloc(8);
	pthread_mutex_lock(&mu);
	live_streams++;
	last_stream_flags = (int)flags;
	pthread_mutex_unlock(&mu);
	return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
	NEED_CTX();
	if (s == NULL) return 400;
	free(s);
	pthread_mutex_lock(&mu);
	live_streams--;
	pthread_mutex_unlock(&mu);
	return 0;
}
CUresult cuStreamSynchronize(void *s) { NEED_CTX(); (void)s; return sticky; }

/* ---------------- memory ---------------- */

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
	NEED_CTX();
	NOT_STICKY();
	if (bytes == 0) return 1;
	if (bytes > ((size_t)1 << 40)) return 2;
	void *m = calloc(1, bytes);
	if (!m) return 2;
	pthread_mutex_lock(&mu);
	live_allocs++;
	pthread_mutex_unlock(&mu);
	*p = (CUdeviceptr)(uintptr_t)m;
	return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	NEED_CTX();
	free((void *)(uintptr_t)p);
	pthread_mutex_lock(&mu);
	live_allocs--;
	pthread_mutex_unlock(&mu);
	return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	NEED_CTX(); NOT_STICKY();
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	NEED_CTX(); NOT_STICKY();
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	NEED_CTX(); NOT_STICKY();
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return 0;
}
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int v, size_t n) {
	NEED_CTX(); NOT_STICKY();
	uint32_t *p = (uint32_t *)(uintptr_t)dst;
	for (size_t i = 0; i < n; i++) p[i] = v;
	return 0;
}
CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
	NEED_CTX(); NOT_STICKY();
	*total = (size_t)85520809984ULL;
	*free_ = *total - (size_t)live_allocs * 4096;
	return 0;
}

/* ---------------- modules and functions ---------------- */

typedef struct { int kind; int max_dyn; const char *name; } func_t;
enum { K_SAXPY = 1, K_FAULT, K_ARGDUMP };
typedef struct { func_t saxpy, fault, argdump; } module_t;

static void put_log(char *buf, size_t size, size_t *written, const char *msg) {
	if (buf == NULL || size == 0) return;
	snprintf(buf, size, "%s", msg);
	if (written) *written = strlen(buf) + 1;
}

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned int n, int *opts, void **vals) {
	NEED_CTX(); NOT_STICKY();
	char *info = NULL, *err = NULL;
	size_t info_size = 0, err_size = 0;
	int info_size_idx = -1, err_size_idx = -1;
	for (unsigned int i = 0; i < n; i++) {
		switch (opts[i]) {
		case 3: info = (char *)vals[i]; break;
		case 4: info_size = (size_t)(uintptr_t)vals[i]; info_size_idx = (int)i; break;
		case 5: err = (char *)vals[i]; break;
		case 6: err_size = (size_t)(uintptr_t)vals[i]; err_size_idx = (int)i; break;
		default: return 1;
		}
	}
	const char *img = (const char *)image;
	size_t w = 0;
	if (strstr(img, "BADPTX")) {
		put_log(err, err_size, &w, "ptxas fatal   : fake error: unexpected BADPTX");
		if (err_size_idx >= 0) vals[err_size_idx] = (void *)(uintptr_t)w;
		return 218;
	}
	char msg[128];
	snprintf(msg, sizeof msg, "fake JIT: loaded %zu bytes of image text", strlen(img));
	put_log(info, info_size, &w, msg);
	if (info_size_idx >= 0) vals[info_size_idx] = (void *)(uintptr_t)w;
	module_t *m = calloc(1, sizeof *m);
	m->saxpy = (func_t){K_SAXPY, 49152, "saxpy"};
	m->fault = (func_t){K_FAULT, 49152, "fault"};
	m->argdump = (func_t){K_ARGDUMP, 49152, "argdump"};
	pthread_mutex_lock(&mu);
	live_modules++;
	pthread_mutex_unlock(&mu);
	*mod = m;
	return 0;
}
CUresult cuModuleUnload(void *mod) {
	NEED_CTX();
	free(mod);
	pthread_mutex_lock(&mu);
	live_modules--;
	pthread_mutex_unlock(&mu);
	return 0;
}
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
	NEED_CTX(); NOT_STICKY();
	module_t *m = mod;
	if (strcmp(name, "saxpy") == 0) *f = &m->saxpy;
	else if (strcmp(name, "fault") == 0) *f = &m->fault;
	else if (strcmp(name, "argdump") == 0) *f = &m->argdump;
	else return 500;
	return 0;
}
CUresult cuFuncGetAttribute(int *v, int attr, void *fp) {
	NEED_CTX(); NOT_STICKY();
	func_t *f = fp;
	switch (attr) {
	case 0: *v = 1024; break;
	case 1: *v = 0; break;
	case 2: *v = 0; break;
	case 3: *v = 0; break;
	case 4: *v = f->kind == K_ARGDUMP ? 40 : 24; break;
	case 5: *v = 90; break;
	case 6: *v = 90; break;
	case 8: *v = f->max_dyn; break;
	default: return 1;
	}
	return 0;
}
CUresult cuFuncSetAttribute(void *fp, int attr, int v) {
	NEED_CTX(); NOT_STICKY();
	func_t *f = fp;
	if (attr == 8) {
		if (v < 0 || v > 232448) return 1;
		f->max_dyn = v;
		return 0;
	}
	if (attr == 9) return 0;
	return 1;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int block, size_t dyn) {
	NEED_CTX(); NOT_STICKY();
	(void)f;
	if (block <= 0) return 1;
	int b = 2048 / block;
	if (dyn > 0) { int s = (int)(233472 / (dyn + 1024)); if (s < b) b = s; }
	*n = b > 32 ? 32 : b;
	return 0;
}

CUresult cuLaunchKernel(void *fp, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			unsigned shared, void *stream, void **params, void **extra) {
	NEED_CTX(); NOT_STICKY();
	func_t *f = fp;
	if (extra != NULL) return 1;
	if ((unsigned long long)bx * by * bz > 1024) return 1;
	if ((int)shared > f->max_dyn) return 1;
	snprintf(last_launch, sizeof last_launch, "%s grid=%u,%u,%u block=%u,%u,%u shared=%u stream=%s",
		 f->name, gx, gy, gz, bx, by, bz, shared, stream ? "set" : "null");
	if (capturing) {
		captured++;
		return 0;
	}
	pthread_mutex_lock(&mu);
	launches++;
	pthread_mutex_unlock(&mu);
	clock_ms += 0.010;
	switch (f->kind) {
	case K_SAXPY: {
		/* saxpy(int n, float a, const float *x, float *y) */
		int n = *(int *)params[0];
		float a = *(float *)params[1];
		const float *x = *(const float **)params[2];
		float *y = *(float **)params[3];
		unsigned long long threads = (unsigned long long)gx * bx;
		for (int i = 0; i < n && (unsigned long long)i < threads; i++) y[i] = a * x[i] + y[i];
		break;
	}
	case K_FAULT:
		sticky = 700; /* reported asynchronously, like a real fault */
		break;
	case K_ARGDUMP: {
		/* argdump(signed char, unsigned char, short, unsigned short, int, unsigned,
		 *         long long, unsigned long long, float, double, struct raw, unsigned long long *out) */
		struct raw { int x; float y; long long z; };
		unsigned long long *out = *(unsigned long long **)params[11];
		struct raw r;
		memcpy(&r, params[10], sizeof r);
		float fv = *(float *)params[8];
		double dv = *(double *)params[9];
		uint32_t fb; uint64_t db; uint32_t ry;
		memcpy(&fb, &fv, 4); memcpy(&db, &dv, 8); memcpy(&ry, &r.y, 4);
		out[0] = (unsigned long long)(long long)*(signed char *)params[0];
		out[1] = *(unsigned char *)params[1];
		out[2] = (unsigned long long)(long long)*(short *)params[2];
		out[3] = *(unsigned short *)params[3];
		out[4] = (unsigned long long)(long long)*(int *)params[4];
		out[5] = *(unsigned *)params[5];
		out[6] = (unsigned long long)*(long long *)params[6];
		out[7] = *(unsigned long long *)params[7];
		out[8] = fb;
		out[9] = db;
		out[10] = (unsigned long long)(long long)r.x;
		out[11] = ry;
		out[12] = (unsigned long long)r.z;
		break;
	}
	}
	return 0;
}

/* ---------------- graphs ---------------- */

typedef struct { int n; } graph_t;

CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
	NEED_CTX(); NOT_STICKY();
	if (stream == NULL || mode < 0 || mode > 2) return 1;
	if (capturing) return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
	capturing = 1;
	captured = 0;
	return 0;
}
CUresult cuStreamEndCapture(void *stream, void **graph) {
	NEED_CTX();
	(void)stream;
	if (!capturing) return 1;
	capturing = 0;
	graph_t *g = calloc(1, sizeof(graph_t));
	g->n = captured;
	*graph = g;
	pthread_mutex_lock(&mu);
	live_graphs++;
	pthread_mutex_unlock(&mu);
	return 0;
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
	NEED_CTX(); NOT_STICKY();
	if (graph == NULL || flags != 0) return 1;
	graph_t *e = calloc(1, sizeof(graph_t));
	e->n = ((graph_t *)graph)->n;
	*exec = e;
	pthread_mutex_lock(&mu);
	live_graphs++;
	pthread_mutex_unlock(&mu);
	return 0;
}
CUresult cuGraphLaunch(void *exec, void *stream) {
	NEED_CTX(); NOT_STICKY();
	(void)stream;
	if (exec == NULL) return 1;
	int n = ((graph_t *)exec)->n;
	pthread_mutex_lock(&mu);
	launches += n;
	pthread_mutex_unlock(&mu);
	clock_ms += 0.005 * n;
	return 0;
}
static CUresult destroy_graph(void *g) {
	if (g == NULL) return 1;
	free(g);
	pthread_mutex_lock(&mu);
	live_graphs--;
	pthread_mutex_unlock(&mu);
	return 0;
}
CUresult cuGraphExecDestroy(void *exec) { NEED_CTX(); return destroy_graph(exec); }
CUresult cuGraphDestroy(void *graph) { NEED_CTX(); return destroy_graph(graph); }

/* ---------------- events ---------------- */

typedef struct { double t; int recorded; } event_t;

CUresult cuEventCreate(void **e, unsigned int flags) {
	NEED_CTX();
	if (flags != 0) return 1;
	*e = calloc(1, sizeof(event_t));
	pthread_mutex_lock(&mu);
	live_events++;
	pthread_mutex_unlock(&mu);
	return 0;
}
CUresult cuEventRecord(void *e, void *stream) {
	NEED_CTX(); NOT_STICKY();
	(void)stream;
	((event_t *)e)->t = clock_ms;
	((event_t *)e)->recorded = 1;
	return 0;
}
CUresult cuEventSynchronize(void *e) { NEED_CTX(); (void)e; return sticky; }
CUresult cuEventQuery(void *e) { NEED_CTX(); NOT_STICKY(); (void)e; return event_query_result; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
	NEED_CTX(); NOT_STICKY();
	event_t *ea = a, *eb = b;
	if (!ea->recorded || !eb->recorded) return 400;
	*ms = (float)(eb->t - ea->t);
	return 0;
}
/* The v1 symbol must not be chosen when _v2 exists. */
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { (void)ms; (void)a; (void)b; return 999; }
CUresult cuEventDestroy_v2(void *e) {
	NEED_CTX();
	free(e);
	pthread_mutex_lock(&mu);
	live_events--;
	pthread_mutex_unlock(&mu);
	return 0;
}

/* ---------------- NVRTC ---------------- */

typedef struct { char *src, *name, *log, *out; size_t out_len; int cubin; } prog_t;

int nvrtcVersion(int *major, int *minor) { *major = 13; *minor = 0; return 0; }
const char *nvrtcGetErrorString(int r) {
	switch (r) {
	case 0: return "NVRTC_SUCCESS";
	case 5: return "NVRTC_ERROR_INVALID_OPTION";
	case 6: return "NVRTC_ERROR_COMPILATION";
	default: return "NVRTC_ERROR_UNKNOWN";
	}
}
int nvrtcCreateProgram(prog_t **p, const char *src, const char *name, int nh, const char *const *h, const char *const *in) {
	(void)h; (void)in;
	if (nh != 0 || src == NULL) return 3;
	prog_t *q = calloc(1, sizeof *q);
	q->src = strdup(src);
	q->name = strdup(name ? name : "default_program");
	*p = q;
	return 0;
}
int nvrtcCompileProgram(prog_t *p, int n, const char *const *opts) {
	size_t cap = 4096;
	for (int i = 0; i < n; i++) cap += strlen(opts[i]) + 4;
	p->log = calloc(1, cap);
	snprintf(p->log, cap, "fake nvrtc: %d options:", n);
	const char *arch = "compute_52";
	for (int i = 0; i < n; i++) {
		strcat(p->log, " ");
		strcat(p->log, opts[i]);
		if (strncmp(opts[i], "--gpu-architecture=", 19) == 0) arch = opts[i] + 19;
		if (strncmp(opts[i], "-arch=", 6) == 0) arch = opts[i] + 6;
		if (strncmp(opts[i], "--bogus", 7) == 0) return 5;
	}
	strcat(p->log, "\n");
	if (strstr(p->src, "#error")) {
		char line[256];
		snprintf(line, sizeof line, "%s(1): error: fake compile error\n", p->name);
		strcat(p->log, line);
		return 6;
	}
	p->cubin = strncmp(arch, "sm_", 3) == 0;
	size_t len = strlen(p->src) + 64;
	p->out = calloc(1, len);
	snprintf(p->out, len, "%s arch=%s\n%s", p->cubin ? "FAKECUBIN" : "//FAKEPTX", arch, p->src);
	p->out_len = strlen(p->out) + (p->cubin ? 0 : 1); /* PTX size includes the NUL */
	return 0;
}
int nvrtcGetPTXSize(prog_t *p, size_t *n) { if (!p->out || p->cubin) return 4; *n = p->out_len; return 0; }
int nvrtcGetPTX(prog_t *p, char *buf) { if (!p->out || p->cubin) return 4; memcpy(buf, p->out, p->out_len); return 0; }
int nvrtcGetCUBINSize(prog_t *p, size_t *n) { if (!p->out) return 4; *n = p->cubin ? p->out_len : 0; return 0; }
int nvrtcGetCUBIN(prog_t *p, char *buf) { if (!p->out || !p->cubin) return 4; memcpy(buf, p->out, p->out_len); return 0; }
int nvrtcGetProgramLogSize(prog_t *p, size_t *n) { *n = p->log ? strlen(p->log) + 1 : 1; return 0; }
int nvrtcGetProgramLog(prog_t *p, char *buf) { if (p->log) strcpy(buf, p->log); else buf[0] = 0; return 0; }
int nvrtcDestroyProgram(prog_t **p) {
	prog_t *q = *p;
	if (!q) return 4;
	free(q->src); free(q->name); free(q->log); free(q->out); free(q);
	*p = NULL;
	return 0;
}

/* ---------------- cuBLAS ---------------- */

typedef struct { void *stream; int math; } handle_t;

int cublasCreate_v2(handle_t **h) {
	if (cur_ctx == NULL) return 1; /* NOT_INITIALIZED: no context on this thread */
	*h = calloc(1, sizeof(handle_t));
	return 0;
}
int cublasDestroy_v2(handle_t *h) { free(h); return 0; }
int cublasSetStream_v2(handle_t *h, void *s) { h->stream = s; return 0; }
int cublasSetMathMode(handle_t *h, int mode) { h->math = mode; last_math_mode = mode; return 0; }

static float h2f(uint16_t h) {
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0) {
		if (man == 0) bits = sign;
		else { /* subnormal */
			exp = 127 - 15 + 1;
			while (!(man & 0x400)) { man <<= 1; exp--; }
			man &= 0x3ff;
			bits = sign | (exp << 23) | (man << 13);
		}
	} else if (exp == 31) bits = sign | 0x7f800000 | (man << 13);
	else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
	float f;
	memcpy(&f, &bits, 4);
	return f;
}
static uint16_t f2h(float f) { /* round to nearest even, normal range only (test data) */
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000;
	int exp = (int)((x >> 23) & 0xff) - 127 + 15;
	uint32_t man = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0) return (uint16_t)sign;
	if (exp >= 31) return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) return (uint16_t)sign;
	uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13);
	uint32_t rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
	return (uint16_t)h;
}
static float ld(const void *p, int type, long idx) {
	return type == 0 ? ((const float *)p)[idx] : h2f(((const uint16_t *)p)[idx]);
}
static void st(void *p, int type, long idx, float v) {
	if (type == 0) ((float *)p)[idx] = v;
	else ((uint16_t *)p)[idx] = f2h(v);
}

int cublasGemmEx(handle_t *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at, int lda,
		 const void *B, int bt, int ldb, const void *beta, void *C, int ct, int ldc, int compute, int algo) {
	if (cur_ctx == NULL || h == NULL) return 1;
	if (compute != 68 || algo != -1) return 7;
	if ((at != 0 && at != 2) || (bt != 0 && bt != 2) || (ct != 0 && ct != 2)) return 15;
	if (ta < 0 || ta > 1 || tb < 0 || tb > 1 || m < 0 || n < 0 || k < 0) return 7;
	int rowsA = ta ? k : m, rowsB = tb ? n : k;
	if (lda < (rowsA > 1 ? rowsA : 1) || ldb < (rowsB > 1 ? rowsB : 1) || ldc < (m > 1 ? m : 1)) return 7;
	float al = *(const float *)alpha, be = *(const float *)beta;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			float s = 0;
			for (int l = 0; l < k; l++) {
				float a = ta ? ld(A, at, l + (long)i * lda) : ld(A, at, i + (long)l * lda);
				float b = tb ? ld(B, bt, j + (long)l * ldb) : ld(B, bt, l + (long)j * ldb);
				s += a * b;
			}
			float c = be == 0 ? 0 : ld(C, ct, i + (long)j * ldc);
			st(C, ct, i + (long)j * ldc, al * s + be * c);
		}
	return 0;
}

int cublasSgemv_v2(handle_t *h, int trans, int m, int n, const float *alpha, const float *A, int lda,
		   const float *x, int incx, const float *beta, float *y, int incy) {
	if (cur_ctx == NULL || h == NULL) return 1;
	if (m < 0 || n < 0 || lda < (m > 1 ? m : 1) || incx <= 0 || incy <= 0 || trans < 0 || trans > 1) return 7;
	int rows = trans ? n : m, cols = trans ? m : n;
	for (int i = 0; i < rows; i++) {
		float s = 0;
		for (int j = 0; j < cols; j++) {
			float a = trans ? A[j + (long)i * lda] : A[i + (long)j * lda];
			s += a * x[(long)j * incx];
		}
		y[(long)i * incy] = *alpha * s + (*beta == 0 ? 0 : *beta * y[(long)i * incy]);
	}
	return 0;
}
