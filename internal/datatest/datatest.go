package datatest

import (
	"os"
	"path/filepath"
	"testing"
)

// Env is the environment variable naming the data directory.
const Env = "GRAFT_DATA"

// Dir returns the data directory named by GRAFT_DATA. It skips the test if
// the variable is unset and fails it if the directory does not exist.
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(Env)
	if dir == "" {
		t.Skipf("%s is not set; set it to the staged data directory (e.g. ../shared/data) to run this test", Env)
	}
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("%s=%s: %v", Env, dir, err)
	}
	if !info.IsDir() {
		t.Fatalf("%s=%s is not a directory", Env, dir)
	}
	return dir
}

// Require returns the path of relPath under the data directory, skipping or
// failing as Dir does, and failing if that file or directory is missing.
func Require(t testing.TB, relPath string) string {
	t.Helper()
	p := filepath.Join(Dir(t), relPath)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s needs %s under %s: %v", t.Name(), relPath, Env, err)
	}
	return p
}
