package sysstat

import (
	"runtime"
	"testing"
)

// Touching 64 MiB of new memory shows in the anonymous resident set.
func TestResidentNowCountsAnonymousMemory(t *testing.T) {
	before, ok := ResidentNow()
	if !ok {
		t.Skip("no RssAnon in /proc/self/status")
	}
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after, _ := ResidentNow()
	runtime.KeepAlive(b)
	if grew := after.Anon - before.Anon; grew < 48<<20 {
		t.Fatalf("RssAnon grew by %d bytes after touching 64 MiB", grew)
	}
	if _, ok := StorageReadBytes(); !ok && runtime.GOOS == "linux" {
		t.Log("no read_bytes in /proc/self/io")
	}
}
