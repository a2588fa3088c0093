package params_test

import (
	"fmt"
	"log"

	"github.com/kerntune/kerntune/params"
)

// Resolve the parameters of one gemv_nt launch: the tuned class entry of the
// device, with one parameter overridden by an environment variable.
func Example() {
	data := []byte(`{
	  "schema_version": 1,
	  "devices": {
	    "cpu:demo-2c": {
	      "backend": "cpu", "name": "Demo CPU", "family": "amd64",
	      "kernels": {"gemv_nt": {"f32/largeK_smallN": {"params": {"BN": 64, "ROWS": 2, "UNROLL": 4, "THREADS": 2}}}}
	    }
	  }
	}`)
	// A real application leaves Lookup nil to read the process environment.
	vars := map[string]string{"KERNTUNE_GEMV_NT_THREADS": "1"}
	l, err := params.LoadBytes(data, params.Options{
		// The device's key; an application may give its name instead
		// (DeviceName), as the system reports it.
		Device: "cpu:demo-2c",
		Lookup: func(name string) (string, bool) { v, ok := vars[name]; return v, ok },
	})
	if err != nil {
		log.Fatal(err)
	}
	r, err := l.Resolve(params.GemvNT, "f32", []int{1, 896, 4864})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Device, r.Class)
	for _, name := range r.Names() {
		fmt.Printf("%-7s %3d  %s\n", name, r.Params[name].Value, r.Params[name].Source)
	}
	// Output:
	// cpu:demo-2c largeK_smallN
	// BN       64  file:cpu:demo-2c/gemv_nt/f32/largeK_smallN
	// ROWS      2  file:cpu:demo-2c/gemv_nt/f32/largeK_smallN
	// UNROLL    4  file:cpu:demo-2c/gemv_nt/f32/largeK_smallN
	// THREADS   1  env:KERNTUNE_GEMV_NT_THREADS
}

// An application opens the file once, at start-up, and resolves before each
// launch. Open reads $KERNTUNE_PARAMS, else ./hardware_params.json; without
// a file the built-in defaults and environment variables apply.
func ExampleOpen() {
	l, err := params.Open(params.Options{Backend: "cpu"})
	if err != nil {
		log.Fatal(err) // the file exists but is damaged: the error says where
	}
	for _, w := range l.Warnings() {
		log.Print("params: ", w)
	}
	r, err := l.Resolve(params.Softmax, "f32", []int{32, 151936})
	if err != nil {
		log.Fatal(err)
	}
	launchSoftmax(r.Int("ROWS"), r.Int("UNROLL"), r.Int("THREADS"))
}

func launchSoftmax(rows, unroll, threads int) {}

// Errors in the environment name the variable, its value and what is allowed.
func ExampleEnvError() {
	l, err := params.LoadBytes([]byte(`{"schema_version":1,"devices":{}}`), params.Options{
		Lookup: func(name string) (string, bool) {
			if name == "KERNTUNE_GEMV_NT_BN" {
				return "48", true
			}
			return "", false
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = l.Resolve(params.GemvNT, "f32", []int{1, 896, 896})
	fmt.Println(err)
	// Output:
	// params: environment KERNTUNE_GEMV_NT_BN="48": not an allowed value of gemv_nt BN on cpu backends; allowed: 4, 8, 16, 32, 64, 128, 256
}

// A damaged file is an error that names the JSON path.
func ExampleLoadBytes_error() {
	_, err := params.LoadBytes([]byte(`{"schema_version":1,"devices":{"cpu:x":{"backend":"cpu","name":"X","family":"amd64",
	  "kernels":{"gemv_nt":{"f32/tiny":{"params":{"BN":7}}}}}}}`), params.Options{})
	fmt.Println(err)
	// Output:
	// params data: devices["cpu:x"].kernels.gemv_nt["f32/tiny"].params.BN: 7 is not an allowed value of gemv_nt BN on cpu backends (allowed: 4, 8, 16, 32, 64, 128, 256)
}

// A GPU application names its device as the system reports it (here as
// MLX's device_info()["device_name"] or MTLDevice.name would) and calls the
// vendor library where the tuner measured it faster than every candidate.
func ExampleResolved_UseBaseline() {
	data := []byte(`{
	  "schema_version": 1,
	  "devices": {
	    "metal:Apple M3 Max:40c": {"backend": "metal", "name": "Apple M3 Max", "family": "apple9", "compute_units": 40,
	      "kernels": {"gemm_av": {"f16/large": {"params": {"BM": 64, "BN": 64, "TM": 4, "TN": 4},
	        "baseline": {"name": "MPS", "median_us": 410.0}, "use": "baseline"}}}},
	    "cuda:NVIDIA H200": {"backend": "cuda", "name": "NVIDIA H200", "family": "sm_90", "compute_units": 132, "kernels": {}}
	  }
	}`)
	l, err := params.LoadBytes(data, params.Options{
		DeviceName: "Apple M3 Max", ComputeUnits: 38, Backend: "metal",
		Lookup: func(string) (string, bool) { return "", false }, // a real application leaves Lookup nil
	})
	if err != nil {
		log.Fatal(err)
	}
	r, err := l.Resolve(params.GemmAV, "f16", []int{1024, 1024, 1024})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Device, "matched by", r.Matched)
	if r.UseBaseline {
		fmt.Println("call", r.Baseline) // e.g. MPSMatrixMultiplication
	} else {
		fmt.Println("launch with BM =", r.Int("BM"))
	}
	// Output:
	// metal:Apple M3 Max:40c matched by name, nearest compute units (40 for 38)
	// call MPS
}

// Launch answers a shape seen before from the loader's cache without
// allocating: the result is shared, so it has methods, not fields.
func ExampleLoader_Launch() {
	l, err := params.LoadBytes([]byte(`{"schema_version": 1, "devices": {"cpu:x": {"backend": "cpu", "name": "X", "family": "amd64",
	  "kernels": {"gemv_nt": {"f32/1x896x4864": {"params": {"BN": 64, "ROWS": 2, "UNROLL": 4, "THREADS": 2}}}}}}}`),
		params.Options{Device: "cpu:x", Lookup: func(string) (string, bool) { return "", false }}) // a real application leaves Lookup nil
	if err != nil {
		log.Fatal(err)
	}
	for range 3 { // e.g. one call per decode step
		x, err := l.Launch(params.GemvNT, "f32", []int{1, 896, 4864})
		if err != nil {
			log.Fatal(err)
		}
		v, _ := x.Value("BN")
		fmt.Println(x.Int("BN"), x.Int("ROWS"), v.Source, x.UseBaseline())
	}
	// Output:
	// 64 2 file:cpu:x/gemv_nt/f32/1x896x4864 false
	// 64 2 file:cpu:x/gemv_nt/f32/1x896x4864 false
	// 64 2 file:cpu:x/gemv_nt/f32/1x896x4864 false
}
