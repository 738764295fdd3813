package dataset

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/graft-gnn/graft/internal/filekind"
	"github.com/klauspost/compress/gzip"
)

// readBufferSize is the bufio buffer for text readers; it is also the longest
// line they accept (a Cora .content line is about 3 KB, CiteSeer's 7.5 KB;
// OGB feature rows are a few KB).
const readBufferSize = 1 << 20

// lineReader yields the lines of a text stream, transparently gunzipped, and
// remembers the line number for errors. Lines are returned without the
// trailing "\n" or "\r\n" and are only valid until the next call.
type lineReader struct {
	name string
	br   *bufio.Reader
	gz   *gzip.Reader
	inf  *inflater // runs gz ahead of the parser
	line int
	err  error
	sep  byte // the line terminator: '\n', or '\r' for old Mac files
}

// newLineReader wraps r, detecting gzip by its magic bytes rather than the
// file name so that misnamed files still work.
func newLineReader(name string, r io.Reader) (*lineReader, error) {
	br := bufio.NewReaderSize(r, readBufferSize)
	lr := &lineReader{name: name, br: br}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: bad gzip header: %w", name, err)
		}
		gz.Multistream(true)
		lr.gz, lr.inf = gz, newInflater(gz)
		lr.br = bufio.NewReaderSize(lr.inf, readBufferSize)
	}
	// A UTF-8 byte order mark, which Excel and Windows tools write, is
	// not part of the first id: left in, it made "\ufeff0" a string id
	// and renumbered every node.
	if bom, _ := lr.br.Peek(3); string(bom) == "\xef\xbb\xbf" {
		lr.br.Discard(3)
	}
	// A binary file given for a text one (a model file as an edge list, a
	// PNG as features) is named for what it is, not parsed into nonsense.
	if head, _ := lr.br.Peek(4 << 10); filekind.Binary(head, -1) {
		lr.close()
		return nil, fmt.Errorf("%s is not a text file: %s", name, filekind.Describe(head, -1))
	}
	// Lines that end in a bare carriage return, as Excel's "CSV
	// (Macintosh)" writes them: a start with a CR followed by another
	// byte, and no line feed. A CR that ends the bytes looked at may be
	// the first half of a CRLF (a first line of 64 KiB less one byte).
	lr.sep = '\n'
	if head, _ := lr.br.Peek(64 << 10); bytes.IndexByte(head, '\n') < 0 {
		if i := bytes.IndexByte(head, '\r'); i >= 0 && i+1 < len(head) {
			lr.sep = '\r'
		}
	}
	return lr, nil
}

// close stops the inflater, if any; the reader is done with.
func (lr *lineReader) close() {
	if lr.inf != nil {
		lr.inf.close()
	}
}

// inflater decompresses a stream in a goroutine of its own, a few chunks
// ahead of its reader, so that inflating a gzipped file and parsing it
// overlap on two cores. Read returns the stream's bytes and then its error
// exactly as the stream gave them.
type inflater struct {
	full chan inflated
	free chan []byte
	done chan struct{}
	cur  []byte // unread part of last
	last []byte // the chunk being read, returned to free when used up
	err  error
}

type inflated struct {
	b   []byte
	err error
}

const (
	inflateChunk  = 256 << 10
	inflateChunks = 4
)

func newInflater(r io.Reader) *inflater {
	in := &inflater{full: make(chan inflated, inflateChunks), free: make(chan []byte, inflateChunks), done: make(chan struct{})}
	for range inflateChunks {
		in.free <- make([]byte, inflateChunk)
	}
	go in.run(r)
	return in
}

func (in *inflater) run(r io.Reader) {
	for {
		var buf []byte
		select {
		case buf = <-in.free:
		case <-in.done:
			return
		}
		n, err := 0, error(nil)
		for n < len(buf) && err == nil {
			var k int
			k, err = r.Read(buf[n:])
			n += k
		}
		select {
		case in.full <- inflated{buf[:n], err}:
		case <-in.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (in *inflater) Read(p []byte) (int, error) {
	for len(in.cur) == 0 {
		if in.err != nil {
			return 0, in.err
		}
		if in.last != nil {
			in.free <- in.last[:cap(in.last)]
			in.last = nil
		}
		c := <-in.full
		in.cur, in.last, in.err = c.b, c.b, c.err
	}
	n := copy(p, in.cur)
	in.cur = in.cur[n:]
	return n, nil
}

// close stops the goroutine; Read must not be called after.
func (in *inflater) close() {
	select {
	case <-in.done:
	default:
		close(in.done)
	}
}

// next returns the next line, or ok=false at the end or on error (see Err).
func (lr *lineReader) next() (line []byte, ok bool) {
	if lr.err != nil {
		return nil, false
	}
	b, err := lr.br.ReadSlice(lr.sep)
	switch {
	case err == nil:
	case errors.Is(err, bufio.ErrBufferFull):
		lr.err = fmt.Errorf("%s: line %d: longer than %d bytes", lr.name, lr.line+1, readBufferSize)
		return nil, false
	case err == io.EOF:
		if len(b) == 0 {
			lr.err = io.EOF
			return nil, false
		}
	case errors.Is(err, io.ErrUnexpectedEOF) && lr.gz != nil:
		lr.err = fmt.Errorf("%s: after line %d: gzip stream is truncated", lr.name, lr.line)
		return nil, false
	default:
		lr.err = fmt.Errorf("%s: after line %d: %w", lr.name, lr.line, err)
		return nil, false
	}
	lr.line++
	if n := len(b); n > 0 && b[n-1] == lr.sep {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, true
}

// Err returns the error that stopped next, or nil at a clean end of input.
func (lr *lineReader) Err() error {
	if lr.err == io.EOF {
		return nil
	}
	return lr.err
}

// errorf formats an error naming the file and the current line.
func (lr *lineReader) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: line %d: %s", lr.name, lr.line, fmt.Sprintf(format, args...))
}

// readLines opens path and calls fn for every line, stopping at fn's first
// error. fn gets the reader for its errors.
func readLines(path string, fn func(lr *lineReader, line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return scanLines(path, f, fn)
}

func scanLines(name string, r io.Reader, fn func(lr *lineReader, line []byte) error) error {
	lr, err := newLineReader(name, r)
	if err != nil {
		return err
	}
	defer lr.close()
	for {
		line, ok := lr.next()
		if !ok {
			return lr.Err()
		}
		if err := fn(lr, line); err != nil {
			return err
		}
	}
}

// isComment reports whether a line is blank or a '#' or '%' comment (SNAP and
// Matrix Market conventions).
func isComment(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t':
			continue
		case '#', '%':
			return true
		}
		return false
	}
	return true
}

// fieldIter walks the fields of a line split on one separator byte, without
// allocating.
type fieldIter struct {
	rest []byte
	sep  byte
	done bool
}

func (it *fieldIter) next() ([]byte, bool) {
	if it.done {
		return nil, false
	}
	if i := bytes.IndexByte(it.rest, it.sep); i >= 0 {
		f := it.rest[:i]
		it.rest = it.rest[i+1:]
		return f, true
	}
	it.done = true
	return it.rest, true
}
