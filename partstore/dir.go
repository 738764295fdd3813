package partstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"

	"github.com/graft-gnn/graft/internal/atomicfile"
	"github.com/graft-gnn/graft/partition"
)

// Format names the version of the stored-part format.
const Format = "graft-parts/1"

const manifestName = "manifest.json"

// Manifest describes a directory of stored parts.
type Manifest struct {
	Format   string `json:"format"`
	Dataset  string `json:"dataset"`
	Split    string `json:"split"`
	Method   string `json:"method"` // how the graph was partitioned
	Nodes    int    `json:"nodes"`
	Parts    int    `json:"parts"`
	Classes  int    `json:"classes"`
	Features int    `json:"features"` // feature columns
	Sparse   bool   `json:"sparse"`   // features stored sparse
	// Layout fingerprints the assignment; every part carries it, and the
	// workers of a job check that they hold parts of the same one.
	Layout string `json:"layout"`
	// Files holds the SHA-256 of every part file, by its path under the
	// directory ("part-0/topology.bin"); absent in sets written before.
	Files map[string]string `json:"files,omitempty"`
	// MAC authenticates the manifest, and through Files every part, with
	// the job secret the set was written with (HMAC-SHA256); empty when it
	// was written without one.
	MAC string `json:"mac,omitempty"`
}

// Dir is the directory of part id under dir.
func Dir(dir string, id int) string { return filepath.Join(dir, fmt.Sprintf("part-%d", id)) }

// fileKey names file name of part id in Manifest.Files.
func fileKey(id int, name string) string { return fmt.Sprintf("part-%d/%s", id, name) }

// Fingerprint identifies an assignment (FNV-64a of the parts' owned ids).
func Fingerprint(l *partition.Layout) uint64 {
	h := fnv.New64a()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(l.K))
	h.Write(b[:])
	for _, p := range l.Parts {
		binary.LittleEndian.PutUint32(b[:], uint32(len(p.Owned)))
		h.Write(b[:])
		for _, v := range p.Owned {
			binary.LittleEndian.PutUint32(b[:], uint32(v))
			h.Write(b[:])
		}
	}
	return h.Sum64()
}

// Write stores every part of layout cut from src, then the manifest (so
// that a directory without a manifest is visibly incomplete). m's Parts,
// Nodes, Classes, Features, Sparse, Layout and Files are filled in; with a
// job secret, MAC authenticates the set.
func Write(dir string, m Manifest, src Source, layout *partition.Layout, secret []byte) error {
	if layout == nil || layout.K < 1 {
		return errors.New("partstore: no layout to store")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	os.Remove(filepath.Join(dir, manifestName))
	fp := Fingerprint(layout)
	m.Files = map[string]string{}
	for i := range layout.Parts {
		sums, err := WritePart(Dir(dir, i), Build(src, &layout.Parts[i], fp))
		if err != nil {
			return err
		}
		for name, sum := range sums {
			m.Files[fileKey(i, name)] = sum
		}
	}
	m.Format, m.Parts, m.Nodes, m.Classes = Format, layout.K, layout.N, src.Classes
	m.Features, m.Sparse = src.Features.Cols(), src.Features.IsSparse()
	m.Layout = fmt.Sprintf("%016x", fp)
	m.MAC = ""
	if len(secret) > 0 {
		m.MAC = m.mac(secret)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(dir, manifestName), append(b, '\n'))
}

// mac is the HMAC-SHA256, keyed with secret, of the manifest without its
// MAC (as compact JSON, whose map keys are sorted).
func (m Manifest) mac(secret []byte) string {
	m.MAC = ""
	b, _ := json.Marshal(m)
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("graft part set\x00"))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// Verify authenticates the set with the job secret: a set written with a
// secret needs the same one. A set written without one passes (there is
// nothing to check it with; Authenticated says so).
func (m *Manifest) Verify(dir string, secret []byte) error {
	switch {
	case m.MAC == "":
		return nil
	case len(secret) == 0:
		return fmt.Errorf("part directory %s was written with a job secret: set GRAFT_TOKEN (or --secret-file) to it", dir)
	case !hmac.Equal([]byte(m.MAC), []byte(m.mac(secret))):
		return fmt.Errorf("part directory %s does not verify with the job secret: its manifest or parts were changed, or written with another secret", dir)
	}
	return nil
}

// Authenticated reports whether the set carries a MAC.
func (m *Manifest) Authenticated() bool { return m.MAC != "" }

// ReadManifest reads dir's manifest.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, fmt.Errorf("part directory: %w (write one with graft partition --out DIR/)", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("part directory %s: %s: %w", dir, manifestName, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("part directory %s: format %q, want %q", dir, m.Format, Format)
	}
	if m.Parts < 1 || m.Classes < 1 || m.Nodes < m.Parts {
		return nil, fmt.Errorf("part directory %s: manifest says %d parts, %d nodes, %d classes", dir, m.Parts, m.Nodes, m.Classes)
	}
	return &m, nil
}

// fileNames are the files of a part directory.
var fileNames = []string{"topology.bin", "features.bin", "labels.bin"}

// WritePart writes sp into dir (created if needed) and returns the SHA-256
// of each file, by name.
func WritePart(dir string, sp *Part) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	sums := map[string]string{}
	for i, arrays := range sp.arrays() {
		b := encodeArrays(arrays)
		if err := atomicfile.WriteBytes(filepath.Join(dir, fileNames[i]), b); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		sums[fileNames[i]] = hex.EncodeToString(sum[:])
	}
	return sums, nil
}

// ReadPart reads part id of the parts stored under dir and checks it
// against the directory's manifest (ReadManifest, Manifest.ReadPart).
func ReadPart(dir string, id int) (*Part, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	return m.ReadPart(dir, id)
}

// ReadPart reads part id of the set m describes, stored under dir: every
// file must have the hash the manifest records for it (when it records
// them), and the part must agree with the manifest on the number of parts,
// nodes, classes, feature columns and storage, and the layout.
func (m *Manifest) ReadPart(dir string, id int) (*Part, error) {
	pd := Dir(dir, id)
	bs := make([][]byte, len(fileNames))
	for i, name := range fileNames {
		b, err := os.ReadFile(filepath.Join(pd, name))
		if err != nil {
			return nil, fmt.Errorf("stored part %d: %w", id, err)
		}
		if want, ok := m.Files[fileKey(id, name)]; ok {
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
				return nil, fmt.Errorf("stored part %d (%s): %s is not the file the manifest describes (its SHA-256 differs)", id, pd, name)
			}
		} else if m.Files != nil {
			return nil, fmt.Errorf("stored part %d (%s): the manifest does not describe %s", id, pd, name)
		}
		bs[i] = b
	}
	sp, err := Decode(bs...)
	if err != nil {
		return nil, fmt.Errorf("stored part %d (%s): %w", id, pd, err)
	}
	if sp.Part.ID != id {
		return nil, fmt.Errorf("stored part %d (%s) says it is part %d", id, pd, sp.Part.ID)
	}
	if err := m.check(sp); err != nil {
		return nil, fmt.Errorf("part directory %s: %s %v", dir, manifestName, err)
	}
	return sp, nil
}

// check compares a part with the manifest, naming the first disagreement.
func (m *Manifest) check(sp *Part) error {
	for _, c := range []struct {
		what       string
		says, part any
	}{
		{"parts", m.Parts, len(sp.Part.HaloStart) - 1},
		{"nodes", m.Nodes, sp.Nodes},
		{"classes", m.Classes, sp.Classes},
		{"feature columns", m.Features, sp.Features.Cols()},
		{"sparse features", m.Sparse, sp.Features.IsSparse()},
		{"layout", m.Layout, fmt.Sprintf("%016x", sp.Layout)},
	} {
		if c.says != c.part {
			return fmt.Errorf("says %v %s, but part %d has %v", c.says, c.what, sp.Part.ID, c.part)
		}
	}
	return nil
}
