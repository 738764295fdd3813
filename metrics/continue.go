package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/graft-gnn/graft/internal/atomicfile"
)

// ContinueEpochs returns the epoch sink of a resumed run writing to the
// file at path, which the run it continues may have written: at the first
// epoch it records, it drops the file's records of that epoch and later
// ones (epochs the interrupted run wrote after its checkpoint, which the
// resume trains again) and appends after the rest, so that the file reads
// as one run's. A missing file is created.
func ContinueEpochs(path string) Sink { return &continued{path: path} }

type continued struct {
	path string
	out  *JSONLines[Epoch]
}

func (c *continued) Record(e Epoch) error {
	if c.out == nil {
		if err := keepBefore(c.path, e.Epoch); err != nil {
			return fmt.Errorf("metrics file: %w", err)
		}
		f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("metrics file: %w", err)
		}
		c.out = &JSONLines[Epoch]{enc: json.NewEncoder(f), file: f}
	}
	return c.out.Record(e)
}

func (c *continued) Close() error {
	if c.out == nil {
		return nil
	}
	return c.out.Close()
}

// keepBefore rewrites the epoch file at path with only its records of
// epochs before epoch, byte for byte. An unterminated last line, a record
// cut short by a crash, is dropped; any other line that is not an epoch
// record is an error (the file is not a run's).
func keepBefore(path string, epoch int) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var kept []byte
	for n := 1; len(b) > 0; n++ {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		line := b[:i+1]
		b = b[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec struct {
			Epoch *int `json:"epoch"`
		}
		if err := json.Unmarshal(line, &rec); err != nil || rec.Epoch == nil {
			return fmt.Errorf("%s line %d is not an epoch record; not continuing it", path, n)
		}
		if *rec.Epoch < epoch {
			kept = append(kept, line...)
		}
	}
	return atomicfile.WriteBytes(path, kept)
}
