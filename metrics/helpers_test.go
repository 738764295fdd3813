package metrics

import (
	"strings"
	"testing"
)

// errorAsWanted checks err against want, a part of the error expected, or
// "" for none. It reports whether the test case goes on to check a result,
// which it does only when no error was wanted.
func errorAsWanted(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatal(err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	return want == ""
}

// names maps xs to their names, for comparing lists of panels or series.
func names[T any](xs []T, name func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, name(x))
	}
	return out
}
