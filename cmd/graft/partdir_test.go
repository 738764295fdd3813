package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// partDir writes Cora's 2 parts into a fresh directory, with the job secret
// token (none if "").
func partDir(t *testing.T, token string) string {
	t.Helper()
	t.Setenv("GRAFT_TOKEN", token)
	parts := filepath.Join(t.TempDir(), "parts") + "/"
	if code, _, stderr := runGraft(t, "partition", "--dataset", "cora", "--parts", "2", "--out", parts); code != 0 {
		t.Fatalf("partition: exit %d: %s", code, stderr)
	}
	return parts
}

// trainPartDir trains one epoch on parts with the job secret token and
// returns graft's exit code and its last line of stderr.
func trainPartDir(t *testing.T, parts, token string) (int, string) {
	t.Helper()
	t.Setenv("GRAFT_TOKEN", token)
	code, _, stderr := runGraft(t, "train", "--epochs", "1", "--part-dir", parts)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return code, lines[len(lines)-1]
}

// editManifest rewrites parts' manifest.json through edit.
func editManifest(t *testing.T, parts string, edit func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(parts, "manifest.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b, 0o644)
}

// A manifest that disagrees with the parts (an edited class count) is
// refused rather than training a model of the wrong shape.
func TestPartDirManifestMustMatchTheParts(t *testing.T) {
	parts := partDir(t, "")
	editManifest(t, parts, func(m map[string]any) { m["classes"] = 9 })
	code, last := trainPartDir(t, parts, "")
	if code == 0 || !strings.Contains(last, "manifest.json says 9 classes") || !strings.Contains(last, "7") {
		t.Fatalf("exit %d: %s", code, last)
	}
}

// A manifest claiming more parts than the directory holds is refused
// before training starts a rank per claimed part: 100000 of them crashed
// graft out of memory, in a group whose memory grows with their square.
func TestPartDirMissingPartsRefusedFirst(t *testing.T) {
	parts := partDir(t, "")
	editManifest(t, parts, func(m map[string]any) { m["parts"], m["nodes"] = 1000, 2000000 })
	var code int
	var last string
	n := allocatedBytes(func() { code, last = trainPartDir(t, parts, "") })
	if code == 0 || !strings.Contains(last, "manifest.json says 1000 parts, but part 2 is missing") {
		t.Fatalf("exit %d: %s", code, last)
	}
	if n > 64<<20 {
		t.Fatalf("refusing it allocated %d MiB", n>>20)
	}
}

// allocatedBytes returns the bytes f allocates.
func allocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Parts written with a job secret are authenticated: training needs the
// same secret, and a part changed consistently (its checksum and the
// manifest's hash of it recomputed, as anyone with write access but
// without the secret could) is refused.
func TestPartDirAuthenticatedWithTheJobSecret(t *testing.T) {
	const secret, other = "9c1f4e7a2b8d3065af17c2e9", "41d8e2b7c95a06f3e18b7d2c"
	parts := partDir(t, secret)
	if code, last := trainPartDir(t, parts, secret); code != 0 {
		t.Fatalf("with the secret: exit %d: %s", code, last)
	}
	// graft launch hands its workers the GRAFT_TOKEN it was given.
	if stdout, stderr, code, _ := graftProcess(t, "launch", "--nproc", "2", "--", "train", "--epochs", "1", "--part-dir", parts, "--start-timeout", "20s"); code != 0 {
		t.Fatalf("launched with the secret: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, tc := range []struct{ token, want string }{{other, "does not verify"}, {"", "GRAFT_TOKEN"}} {
		if code, last := trainPartDir(t, parts, tc.token); code == 0 || !strings.Contains(last, tc.want) {
			t.Errorf("secret %q: exit %d: %s", tc.token, code, last)
		}
	}
	// Change part 0's first label, keeping the file's CRC-32C and the
	// manifest's hash of it right.
	labels := filepath.Join(parts, "part-0", "labels.bin")
	b, err := os.ReadFile(labels)
	if err != nil {
		t.Fatal(err)
	}
	first := 8 + 4 + 1 + len("labels") + 1 + 8
	b[first] = (b[first] + 1) % 7
	body := b[:len(b)-4]
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	os.WriteFile(labels, b, 0o644)
	sum := sha256.Sum256(b)
	editManifest(t, parts, func(m map[string]any) {
		if files, ok := m["files"].(map[string]any); ok {
			files["part-0/labels.bin"] = hex.EncodeToString(sum[:])
		}
	})
	if code, last := trainPartDir(t, parts, secret); code == 0 || !strings.Contains(last, "does not verify") {
		t.Fatalf("a changed part: exit %d: %s", code, last)
	}
}

// With a job secret of the user's, parts must be authenticated: removing the
// MAC along with a change does not get a changed set accepted. Without one,
// or with the secret graft launch makes for a job, an unauthenticated set
// trains (with a warning).
func TestPartDirUnauthenticatedRefusedWithASecret(t *testing.T) {
	const secret = "5e0b9d27c4f18a63b2d7e4c1"
	parts := partDir(t, secret)
	editManifest(t, parts, func(m map[string]any) { delete(m, "mac") })
	if code, last := trainPartDir(t, parts, secret); code == 0 || !strings.Contains(last, "is not authenticated") || !strings.Contains(last, "--part-dir "+parts) {
		t.Fatalf("a set whose MAC was removed: exit %d: %s", code, last)
	}
	if code, last := trainPartDir(t, parts, ""); code != 0 {
		t.Fatalf("without a job secret: exit %d: %s", code, last)
	}
	t.Setenv("GRAFT_TOKEN", "")
	if stdout, stderr, code, _ := graftProcess(t, "launch", "--nproc", "2", "--", "train", "--epochs", "1", "--part-dir", parts, "--start-timeout", "20s"); code != 0 ||
		!strings.Contains(stderr, "is not authenticated (written without a job secret)") {
		t.Fatalf("launched with a secret of its own: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
