package cudadrv

import (
	"fmt"
	"runtime"
	"strings"
)

// NVRTCVersion returns the NVRTC version (nvrtcVersion).
func (l *Lib) NVRTCVersion() (major, minor int, err error) {
	if l.nv == nil {
		return 0, 0, l.NVRTCError()
	}
	var ma, mi int32
	if r := l.nv.nvrtcVersion(&ma, &mi); r != 0 {
		return 0, 0, l.nvrtcError("nvrtcVersion", r, "", "")
	}
	return int(ma), int(mi), nil
}

func (l *Lib) nvrtcError(call string, r int32, detail, log string) *Error {
	e := &Error{Lib: LibNVRTC, Call: call, Code: int(r), Name: nvrtcResultName(int(r)), Detail: detail, Log: log}
	if l.nv != nil && l.nv.nvrtcGetErrorString != nil {
		if s := l.nv.nvrtcGetErrorString(r); s != e.Name {
			e.Msg = s
		}
	}
	return e
}

// WantsCUBIN reports whether NVRTC options name a real architecture
// (--gpu-architecture=sm_XX, -arch=sm_XX, or the flag and value as two
// options), for which Compile returns a CUBIN; otherwise it returns PTX.
func WantsCUBIN(opts []string) bool {
	arch := ""
	for i, o := range opts {
		switch {
		case strings.HasPrefix(o, "--gpu-architecture="):
			arch = strings.TrimPrefix(o, "--gpu-architecture=")
		case strings.HasPrefix(o, "-arch="):
			arch = strings.TrimPrefix(o, "-arch=")
		case (o == "--gpu-architecture" || o == "-arch") && i+1 < len(opts):
			arch = opts[i+1]
		}
	}
	return strings.HasPrefix(arch, "sm_")
}

// Compile compiles CUDA C++ source with NVRTC. It needs no context and is
// safe to call from many goroutines at once. opts are NVRTC options, e.g.
// "--gpu-architecture=sm_90", "-default-device", "--std=c++17",
// "-lineinfo". The image is a CUBIN when the architecture is real (sm_XX,
// see WantsCUBIN) and NUL-terminated PTX otherwise; both load with
// Context.LoadModule. log is the program log (warnings too), also on
// success. A compilation error is an *Error whose Log holds the log.
// name is the file name used in messages ("kernel.cu" when empty).
func (l *Lib) Compile(src, name string, opts []string) (image []byte, log string, err error) {
	if l.nv == nil {
		return nil, "", l.NVRTCError()
	}
	nv := l.nv
	if name == "" {
		name = "kernel.cu"
	}
	csrc, err := cString(src)
	if err != nil {
		return nil, "", err
	}
	cname, err := cString(name)
	if err != nil {
		return nil, "", err
	}
	copts := make([][]byte, len(opts))
	optPtrs := make([]*byte, len(opts))
	for i, o := range opts {
		if copts[i], err = cString(o); err != nil {
			return nil, "", err
		}
		optPtrs[i] = &copts[i][0]
	}
	cubin := WantsCUBIN(opts)
	if cubin && (nv.nvrtcGetCUBINSize == nil || nv.nvrtcGetCUBIN == nil) {
		return nil, "", fmt.Errorf("cudadrv: this NVRTC has no nvrtcGetCUBIN; use --gpu-architecture=compute_XX for PTX")
	}

	var prog uintptr
	if r := nv.nvrtcCreateProgram(&prog, &csrc[0], &cname[0], 0, nil, nil); r != 0 {
		return nil, "", l.nvrtcError("nvrtcCreateProgram", r, name, "")
	}
	defer func() {
		if r := nv.nvrtcDestroyProgram(&prog); r != 0 && err == nil {
			err = l.nvrtcError("nvrtcDestroyProgram", r, name, "")
		}
		// The source and options must outlive the program.
		runtime.KeepAlive(csrc)
		runtime.KeepAlive(cname)
		runtime.KeepAlive(copts)
	}()

	var optArg **byte
	if len(optPtrs) > 0 {
		optArg = &optPtrs[0]
	}
	rc := nv.nvrtcCompileProgram(prog, int32(len(optPtrs)), optArg)
	runtime.KeepAlive(optPtrs)
	log, logErr := l.programLog(prog)
	if rc != 0 {
		detail := name
		if len(opts) > 0 {
			detail += " " + strings.Join(opts, " ")
		}
		return nil, log, l.nvrtcError("nvrtcCompileProgram", rc, detail, log)
	}
	if logErr != nil {
		return nil, "", logErr
	}

	sizeFn, getFn, what := nv.nvrtcGetPTXSize, nv.nvrtcGetPTX, "PTX"
	if cubin {
		sizeFn, getFn, what = nv.nvrtcGetCUBINSize, nv.nvrtcGetCUBIN, "CUBIN"
	}
	var n uintptr
	if r := sizeFn(prog, &n); r != 0 {
		return nil, log, l.nvrtcError("nvrtcGet"+what+"Size", r, name, log)
	}
	if n == 0 {
		return nil, log, fmt.Errorf("cudadrv: NVRTC produced an empty %s for %s", what, name)
	}
	image = make([]byte, n)
	if r := getFn(prog, &image[0]); r != 0 {
		return nil, log, l.nvrtcError("nvrtcGet"+what, r, name, log)
	}
	return image, log, nil
}

// programLog fetches the NVRTC program log (without the trailing NUL).
func (l *Lib) programLog(prog uintptr) (string, error) {
	var n uintptr
	if r := l.nv.nvrtcGetProgramLogSize(prog, &n); r != 0 {
		return "", l.nvrtcError("nvrtcGetProgramLogSize", r, "", "")
	}
	if n <= 1 {
		return "", nil
	}
	buf := make([]byte, n)
	if r := l.nv.nvrtcGetProgramLog(prog, &buf[0]); r != 0 {
		return "", l.nvrtcError("nvrtcGetProgramLog", r, "", "")
	}
	return strings.TrimRight(string(buf), "\x00"), nil
}
