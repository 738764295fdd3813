package partstore

import (
	"encoding/binary"
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
}

// Dir is the directory of part id under dir.
func Dir(dir string, id int) string { return filepath.Join(dir, fmt.Sprintf("part-%d", id)) }

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
// Nodes, Classes, Features, Sparse and Layout are filled in.
func Write(dir string, m Manifest, src Source, layout *partition.Layout) error {
	if layout == nil || layout.K < 1 {
		return errors.New("partstore: no layout to store")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	os.Remove(filepath.Join(dir, manifestName))
	fp := Fingerprint(layout)
	for i := range layout.Parts {
		if err := WritePart(Dir(dir, i), Build(src, &layout.Parts[i], fp)); err != nil {
			return err
		}
	}
	m.Format, m.Parts, m.Nodes, m.Classes = Format, layout.K, layout.N, src.Classes
	m.Features, m.Sparse = src.Features.Cols(), src.Features.IsSparse()
	m.Layout = fmt.Sprintf("%016x", fp)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(dir, manifestName), append(b, '\n'))
}

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

// WritePart writes sp into dir (created if needed).
func WritePart(dir string, sp *Part) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, arrays := range sp.arrays() {
		if err := atomicfile.WriteBytes(filepath.Join(dir, fileNames[i]), encodeArrays(arrays)); err != nil {
			return err
		}
	}
	return nil
}

// ReadPart reads part id of the parts stored under dir.
func ReadPart(dir string, id int) (*Part, error) {
	pd := Dir(dir, id)
	bs := make([][]byte, len(fileNames))
	for i, name := range fileNames {
		b, err := os.ReadFile(filepath.Join(pd, name))
		if err != nil {
			return nil, fmt.Errorf("stored part %d: %w", id, err)
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
	return sp, nil
}
