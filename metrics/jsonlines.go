package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// JSONLines writes one JSON object per line, one line per record. Each
// record is written as it comes, unbuffered, so a file of a long run can
// be followed (tail -f, graft plot) while it grows and keeps every epoch
// written before a crash.
type JSONLines[T any] struct {
	enc  *json.Encoder
	file *os.File // closed by Close when the sink opened it
}

// NewJSONLines returns the epoch sink writing to w; Close leaves w open.
func NewJSONLines(w io.Writer) *JSONLines[Epoch] { return NewJSONLinesOf[Epoch](w) }

// NewJSONLinesOf writes records of any type to w; Close leaves w open.
func NewJSONLinesOf[T any](w io.Writer) *JSONLines[T] {
	return &JSONLines[T]{enc: json.NewEncoder(w)}
}

// CreateJSONLines creates (or truncates) the file at path and writes
// records of type T to it; Close closes the file.
func CreateJSONLines[T any](path string) (*JSONLines[T], error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &JSONLines[T]{enc: json.NewEncoder(f), file: f}, nil
}

// Record writes v as one line.
func (l *JSONLines[T]) Record(v T) error { return l.enc.Encode(v) }

// Close closes the file CreateJSONLines opened; for a writer the caller
// passed it does nothing, since the caller owns that writer.
func (l *JSONLines[T]) Close() error {
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// ReadJSONLines reads the epochs a JSONLines sink wrote.
func ReadJSONLines(r io.Reader) ([]Epoch, error) { return ReadJSONLinesOf[Epoch](r) }

// ReadJSONLinesOf reads one JSON object per line into T. Blank lines are
// skipped; keys T does not know are ignored, so newer files stay readable.
// A line that is not one well-formed object gives an error naming its
// line number.
func ReadJSONLinesOf[T any](r io.Reader) ([]T, error) {
	br := bufio.NewReader(r)
	var out []T
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			v, perr := parseObject[T](trimmed)
			if perr != nil {
				return nil, fmt.Errorf("line %d: %w", n, perr)
			}
			out = append(out, v)
		}
		if err != nil { // io.EOF
			return out, nil
		}
	}
}

// parseObject decodes one line, which must be a JSON object: json.Unmarshal
// alone would accept null, or a number into an interface, as a record.
func parseObject[T any](line []byte) (T, error) {
	var v T
	if line[0] != '{' {
		return v, fmt.Errorf("not a JSON object: %.40q", line)
	}
	if err := json.Unmarshal(line, &v); err != nil {
		return v, err
	}
	return v, nil
}
