package datatest

import (
	"os"
	"testing"
)

// recorder is a testing.TB that records how a helper ended the test instead of
// ending the real one.
type recorder struct {
	testing.TB
	skipped, failed bool
}

type stop struct{}

func (r *recorder) Helper()               {}
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; panic(stop{}) }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(stop{}) }
func (r *recorder) Name() string          { return "recorder" }

func run(t *testing.T, fn func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(stop); !ok {
					panic(v)
				}
			}
		}()
		fn(r)
	}()
	return r
}

func TestDir(t *testing.T) {
	existing := t.TempDir()
	if err := os.WriteFile(existing+"/present.txt", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		env        string
		rel        string
		skip, fail bool
	}{
		{name: "unset skips", env: "", skip: true},
		{name: "missing dir fails", env: existing + "/nope", fail: true},
		{name: "present dir", env: existing},
		{name: "present file", env: existing, rel: "present.txt"},
		{name: "missing file fails", env: existing, rel: "absent.txt", fail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(Env, tc.env)
			r := run(t, func(tb testing.TB) {
				if tc.rel != "" {
					Require(tb, tc.rel)
				} else {
					Dir(tb)
				}
			})
			if r.skipped != tc.skip || r.failed != tc.fail {
				t.Errorf("skipped=%v failed=%v, want skipped=%v failed=%v", r.skipped, r.failed, tc.skip, tc.fail)
			}
		})
	}
}
