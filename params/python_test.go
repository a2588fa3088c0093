package params

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// TestPythonLocalDevice checks that the Python loader
// (python/kerntune_params) describes this machine's CPU with the key, name,
// family and core count LocalDevice gives (and so the CPU backend writes):
// without options, both loaders must find the same device. It needs
// python3; KTDEV_REQUIRE_PYTHON makes its absence a failure (CI).
func TestPythonLocalDevice(t *testing.T) {
	py := testutil.Python3(t)
	src, err := filepath.Abs(filepath.Join("..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", "import dataclasses, json, kerntune_params as kp; print(json.dumps(dataclasses.asdict(kp.local_device())))")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+src, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got DeviceID
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := LocalDevice(); got != want {
		t.Errorf("Python local_device() = %+v\nGo LocalDevice()      = %+v", got, want)
	}
}
