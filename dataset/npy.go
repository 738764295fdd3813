package dataset

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/graft-gnn/graft/internal/filekind"
	"github.com/graft-gnn/graft/internal/sysstat"
)

// Array is one numpy array as read from a .npy file or an .npz member. Its
// data stays in the file's little-endian byte form until a typed accessor
// converts it, so arrays a layout does not need cost no conversion.
type Array struct {
	Name   string // file or member name, used in every error
	DType  string // numpy descr, e.g. "<f4", "|b1", "<U19"
	Shape  []int  // empty for a scalar
	data   []byte // len = Len() * itemsize, once loaded
	loaded bool   // an .npz member's data is read only once its layout is checked
}

// ready refuses to convert an array whose data has not been read.
func (a *Array) ready() error {
	if !a.loaded {
		return fmt.Errorf("array %s: its data was not read", a.Name)
	}
	return nil
}

// npyDType describes one supported numpy dtype.
type npyDType struct {
	kind     byte // 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool, 'U' unicode, 'S' bytes, 'V' bfloat16
	itemsize int
}

// supportedDTypes lists the dtypes graft reads. Single-byte types may carry
// any byte-order mark; wider ones must be little-endian ('<').
// <V2 is bfloat16 as numpy saves ml_dtypes' bfloat16 (a 2-byte void).
const supportedDTypes = "<f2 <f4 <f8 <V2 (bfloat16) |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1 <U<n> |S<n>"

func parseDType(descr string) (npyDType, error) {
	if len(descr) < 3 {
		return npyDType{}, fmt.Errorf("unsupported dtype %q (supported: %s)", descr, supportedDTypes)
	}
	order, kind, size := descr[0], descr[1], descr[2:]
	n, err := strconv.Atoi(size)
	if err != nil || n <= 0 {
		return npyDType{}, fmt.Errorf("unsupported dtype %q (supported: %s)", descr, supportedDTypes)
	}
	switch {
	case order == '>' && !(n == 1 && kind != 'U' || kind == 'S'):
		return npyDType{}, fmt.Errorf("big-endian dtype %q is not supported; save the array little-endian", descr)
	case order != '<' && order != '|' && order != '=' && order != '>':
		return npyDType{}, fmt.Errorf("unsupported dtype %q (supported: %s)", descr, supportedDTypes)
	}
	switch {
	case kind == 'f' && (n == 2 || n == 4 || n == 8),
		(kind == 'i' || kind == 'u') && (n == 1 || n == 2 || n == 4 || n == 8),
		kind == 'b' && n == 1,
		kind == 'V' && n == 2:
		return npyDType{kind: kind, itemsize: n}, nil
	case kind == 'U' && n <= 1<<20:
		return npyDType{kind: 'U', itemsize: 4 * n}, nil
	case kind == 'S' && n <= 1<<20:
		return npyDType{kind: 'S', itemsize: n}, nil
	}
	return npyDType{}, fmt.Errorf("unsupported dtype %q (supported: %s)", descr, supportedDTypes)
}

// Len is the number of elements (the product of Shape; 1 for a scalar).
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

func (a *Array) dtype() npyDType {
	dt, _ := parseDType(a.DType) // validated when the array was read
	return dt
}

// Float32s converts a numeric array to float32. Integers and booleans convert
// exactly when small enough; float64 values are rounded.
func (a *Array) Float32s() ([]float32, error) {
	if err := a.ready(); err != nil {
		return nil, err
	}
	dt := a.dtype()
	n := a.Len()
	out := make([]float32, n)
	switch dt.kind {
	case 'f':
		switch dt.itemsize {
		case 2:
			for i := range out {
				out[i] = halfToFloat32(binary.LittleEndian.Uint16(a.data[2*i:]))
			}
			return out, nil
		case 4:
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.data[4*i:]))
			}
			return out, nil
		}
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(a.data[8*i:])))
		}
		return out, nil
	case 'V':
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(a.data[2*i:])) << 16)
		}
		return out, nil
	case 'i', 'u', 'b':
		ints, err := a.Int64s()
		if err != nil {
			return nil, err
		}
		for i, v := range ints {
			out[i] = float32(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("array %s: dtype %s is not numeric", a.Name, a.DType)
}

// Int64s converts an integer or boolean array to int64. Float arrays are
// accepted only when every value is a whole number, since some exporters
// store labels and indices as floats.
func (a *Array) Int64s() ([]int64, error) {
	if err := a.ready(); err != nil {
		return nil, err
	}
	dt := a.dtype()
	n := a.Len()
	out := make([]int64, n)
	switch {
	case dt.kind == 'i' && dt.itemsize == 1:
		for i := range out {
			out[i] = int64(int8(a.data[i]))
		}
	case dt.kind == 'u' && dt.itemsize == 1 || dt.kind == 'b':
		for i := range out {
			out[i] = int64(a.data[i])
		}
	case dt.kind == 'i' && dt.itemsize == 2:
		for i := range out {
			out[i] = int64(int16(binary.LittleEndian.Uint16(a.data[2*i:])))
		}
	case dt.kind == 'u' && dt.itemsize == 2:
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint16(a.data[2*i:]))
		}
	case dt.kind == 'u' && dt.itemsize == 4:
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint32(a.data[4*i:]))
		}
	case dt.kind == 'u' && dt.itemsize == 8:
		for i := range out {
			v := binary.LittleEndian.Uint64(a.data[8*i:])
			if v > math.MaxInt64 {
				return nil, fmt.Errorf("array %s: element %d is %d, beyond 2^63-1", a.Name, i, v)
			}
			out[i] = int64(v)
		}
	case dt.kind == 'i' && dt.itemsize == 4:
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(a.data[4*i:])))
		}
	case dt.kind == 'i' && dt.itemsize == 8:
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(a.data[8*i:]))
		}
	case dt.kind == 'f':
		fs, err := a.Float64s()
		if err != nil {
			return nil, err
		}
		for i, f := range fs {
			if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return nil, fmt.Errorf("array %s: element %d is %v, want an integer", a.Name, i, f)
			}
			out[i] = int64(f)
		}
	default:
		return nil, fmt.Errorf("array %s: dtype %s is not an integer type", a.Name, a.DType)
	}
	return out, nil
}

// Float64s converts a float array to float64.
func (a *Array) Float64s() ([]float64, error) {
	if err := a.ready(); err != nil {
		return nil, err
	}
	dt := a.dtype()
	if dt.kind != 'f' {
		return nil, fmt.Errorf("array %s: dtype %s is not a float type", a.Name, a.DType)
	}
	out := make([]float64, a.Len())
	for i := range out {
		if dt.itemsize == 2 {
			out[i] = float64(halfToFloat32(binary.LittleEndian.Uint16(a.data[2*i:])))
		} else if dt.itemsize == 4 {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(a.data[4*i:])))
		} else {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(a.data[8*i:]))
		}
	}
	return out, nil
}

// Int32s converts an integer array to int32, rejecting values out of range.
func (a *Array) Int32s() ([]int32, error) {
	wide, err := a.Int64s()
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(wide))
	for i, v := range wide {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, fmt.Errorf("array %s: element %d = %d does not fit in int32", a.Name, i, v)
		}
		out[i] = int32(v)
	}
	return out, nil
}

// Bools converts a boolean array, or an integer array holding only 0 and 1
// (Geom-GCN stores masks as uint8), to []bool.
func (a *Array) Bools() ([]bool, error) {
	dt := a.dtype()
	if dt.kind == 'f' || dt.kind == 'U' {
		return nil, fmt.Errorf("array %s: dtype %s cannot be a mask (want |b1 or an integer type)", a.Name, a.DType)
	}
	ints, err := a.Int64s()
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(ints))
	for i, v := range ints {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("array %s: element %d = %d, want 0 or 1 in a mask", a.Name, i, v)
		}
		out[i] = v == 1
	}
	return out, nil
}

// Strings converts a fixed-width unicode (<U n) or bytes (|S n) array,
// dropping the NUL padding.
func (a *Array) Strings() ([]string, error) {
	if err := a.ready(); err != nil {
		return nil, err
	}
	dt := a.dtype()
	if dt.kind == 'S' {
		out := make([]string, a.Len())
		for i := range out {
			out[i] = string(bytes.TrimRight(a.data[i*dt.itemsize:(i+1)*dt.itemsize], "\x00"))
		}
		return out, nil
	}
	if dt.kind != 'U' {
		return nil, fmt.Errorf("array %s: dtype %s is not a unicode string type", a.Name, a.DType)
	}
	n := a.Len()
	out := make([]string, n)
	var sb strings.Builder
	for i := range out {
		sb.Reset()
		item := a.data[i*dt.itemsize : (i+1)*dt.itemsize]
		for j := 0; j < len(item); j += 4 {
			r := rune(binary.LittleEndian.Uint32(item[j:]))
			if r == 0 {
				break
			}
			if !utf8.ValidRune(r) {
				return nil, fmt.Errorf("array %s: element %d holds invalid code point %#x", a.Name, i, uint32(r))
			}
			sb.WriteRune(r)
		}
		out[i] = sb.String()
	}
	return out, nil
}

// maxNPYHeader bounds the header so that a corrupt length cannot ask for
// gigabytes; real headers are under a kilobyte.
const maxNPYHeader = 1 << 20

var npyMagic = []byte("\x93NUMPY")

// maxNPYBytes bounds an array's data (1 PiB), so that a shape's product
// cannot overflow; what may be allocated is checked where it is.
const maxNPYBytes = min(1<<50, math.MaxInt)

// npyHeader is the decoded dict of a .npy header.
type npyHeader struct {
	descr  string
	dtype  npyDType
	shape  []int
	nbytes int // data bytes the shape and dtype call for
}

// readNPYHeader reads the magic, version and header dict from r.
func readNPYHeader(r io.Reader) (npyHeader, error) {
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return npyHeader{}, fmt.Errorf("reading magic: %w", noEOF(err))
	}
	if !bytes.Equal(pre[:6], npyMagic) {
		n, _ := io.ReadFull(r, pre[8:]) // a safetensors file is known by its ninth byte
		return npyHeader{}, fmt.Errorf(`not a .npy array (missing "\x93NUMPY" magic)%s`, whatItIs(pre[:8+n]))
	}
	var hlen int
	switch major := pre[6]; major {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return npyHeader{}, fmt.Errorf("reading header length: %w", noEOF(err))
		}
		hlen = int(binary.LittleEndian.Uint16(pre[8:10]))
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return npyHeader{}, fmt.Errorf("reading header length: %w", noEOF(err))
		}
		hlen = int(binary.LittleEndian.Uint32(l[:]))
	default:
		return npyHeader{}, fmt.Errorf("unsupported .npy format version %d.%d", major, pre[7])
	}
	if hlen > maxNPYHeader {
		return npyHeader{}, fmt.Errorf("header length %d is implausibly large", hlen)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return npyHeader{}, fmt.Errorf("reading %d-byte header: %w", hlen, noEOF(err))
	}
	return parseNPYHeader(string(hdr))
}

// parseNPYHeader parses the Python dict literal numpy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
func parseNPYHeader(s string) (npyHeader, error) {
	p := &dictParser{s: s}
	fields, err := p.parseDict()
	if err != nil {
		return npyHeader{}, fmt.Errorf("header %q: %w", clip(s, 120), err)
	}
	var h npyHeader
	descr, ok := fields["descr"].(string)
	if !ok {
		return npyHeader{}, fmt.Errorf("header %q: missing or non-string 'descr' (structured dtypes are not supported)", clip(s, 120))
	}
	h.descr = descr
	if h.dtype, err = parseDType(descr); err != nil {
		return npyHeader{}, err
	}
	shape, ok := fields["shape"].([]int)
	if !ok {
		return npyHeader{}, fmt.Errorf("header %q: missing or malformed 'shape'", clip(s, 120))
	}
	h.shape = shape
	fortran, ok := fields["fortran_order"].(bool)
	if !ok {
		return npyHeader{}, fmt.Errorf("header %q: missing or non-boolean 'fortran_order'", clip(s, 120))
	}
	if fortran && len(shape) > 1 {
		return npyHeader{}, fmt.Errorf("fortran_order arrays are not supported (shape %v); save with np.ascontiguousarray", shape)
	}
	// Guard the product against overflow before anything is allocated.
	n := h.dtype.itemsize
	for _, d := range shape {
		if d < 0 {
			return npyHeader{}, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d != 0 && n > maxNPYBytes/d {
			return npyHeader{}, fmt.Errorf("shape %v of %s is too large", shape, descr)
		}
		n *= d
	}
	h.nbytes = n
	return h, nil
}

// dictParser is a tiny recursive-descent parser for the subset of Python
// literals .npy headers use: a dict of string keys whose values are strings,
// booleans or tuples of integers.
type dictParser struct {
	s   string
	pos int
}

func (p *dictParser) skipSpace() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\n' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *dictParser) expect(c byte) error {
	p.skipSpace()
	if p.pos >= len(p.s) || p.s[p.pos] != c {
		return fmt.Errorf("expected %q at offset %d", c, p.pos)
	}
	p.pos++
	return nil
}

func (p *dictParser) peek() byte {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

func (p *dictParser) parseDict() (map[string]any, error) {
	if err := p.expect('{'); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for p.peek() != '}' {
		key, err := p.parseString()
		if err != nil {
			return nil, err
		}
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		val, err := p.parseValue()
		if err != nil {
			return nil, fmt.Errorf("value of %q: %w", key, err)
		}
		out[key] = val
		if p.peek() == ',' {
			p.pos++
		} else if p.peek() != '}' {
			return nil, fmt.Errorf("expected ',' or '}' at offset %d", p.pos)
		}
	}
	p.pos++
	return out, nil
}

func (p *dictParser) parseString() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", fmt.Errorf("expected a quoted string at offset %d", p.pos)
	}
	end := strings.IndexByte(p.s[p.pos+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string at offset %d", p.pos)
	}
	v := p.s[p.pos+1 : p.pos+1+end]
	p.pos += end + 2
	return v, nil
}

func (p *dictParser) parseValue() (any, error) {
	switch c := p.peek(); {
	case c == '\'' || c == '"':
		return p.parseString()
	case c == '(':
		return p.parseTuple()
	case strings.HasPrefix(p.s[p.pos:], "True"):
		p.pos += 4
		return true, nil
	case strings.HasPrefix(p.s[p.pos:], "False"):
		p.pos += 5
		return false, nil
	}
	return nil, fmt.Errorf("unsupported value at offset %d (structured dtypes are not supported)", p.pos)
}

func (p *dictParser) parseTuple() ([]int, error) {
	p.pos++ // '('
	dims := []int{}
	for p.peek() != ')' {
		start := p.pos
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
		// Python 2 numpy wrote long dimensions as "3L".
		digits := p.s[start:p.pos]
		if p.pos < len(p.s) && p.s[p.pos] == 'L' {
			p.pos++
		}
		d, err := strconv.Atoi(digits)
		if err != nil || d > math.MaxInt32 {
			return nil, fmt.Errorf("bad dimension %q at offset %d", digits, start)
		}
		dims = append(dims, d)
		if len(dims) > 32 {
			return nil, errors.New("more than 32 dimensions")
		}
		if p.peek() == ',' {
			p.pos++
		} else if p.peek() != ')' {
			return nil, fmt.Errorf("expected ',' or ')' at offset %d", p.pos)
		}
	}
	p.pos++
	return dims, nil
}

// ParseNPY decodes one .npy array held in memory; name labels errors.
func ParseNPY(name string, b []byte) (*Array, error) {
	r := bytes.NewReader(b)
	h, err := readNPYHeader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if r.Len() < h.nbytes {
		return nil, fmt.Errorf("%s: truncated: shape %v of %s needs %d data bytes, file has %d", name, h.shape, h.descr, h.nbytes, r.Len())
	}
	off := len(b) - r.Len()
	return &Array{Name: name, DType: h.descr, Shape: h.shape, data: b[off : off+h.nbytes], loaded: true}, nil
}

// NPZ is the set of arrays in an .npz archive, by name without ".npy".
type NPZ struct {
	Path   string
	Arrays map[string]*Array
}

// Names lists the member arrays, sorted.
func (z *NPZ) Names() []string {
	names := make([]string, 0, len(z.Arrays))
	for k := range z.Arrays {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Get returns the named array or an error that names the archive and lists
// what it does hold.
func (z *NPZ) Get(name string) (*Array, error) {
	a, ok := z.Arrays[name]
	if !ok {
		return nil, fmt.Errorf("%s: no array %q (archive holds %s)", z.Path, name, strings.Join(z.Names(), ", "))
	}
	return a, nil
}

// Has reports whether the archive holds the named array.
func (z *NPZ) Has(name string) bool { _, ok := z.Arrays[name]; return ok }

// maxDeflateRatio is the most deflate can expand its input (about 1032:1).
// A member whose header claims more data than its compressed size could hold
// is truncated or corrupt, and is rejected before any allocation.
const maxDeflateRatio = 1040

// smallMember is the size up to which a member's data is read with its
// header: shapes and the like, which a layout check may look at.
const smallMember = 4096

// ParseNPZ decodes an .npz archive (zip, stored or deflate) held in memory;
// path labels errors. It reads every member's header before any member's
// data, and refuses data that would not fit in the memory available.
func ParseNPZ(path string, b []byte) (*NPZ, error) { return parseNPZ(path, b, nil) }

// parseNPZ is ParseNPZ with a layout check: check sees every array's
// header (and the data of the small ones) before anything large is
// inflated; it may refuse the archive, or remove the arrays it does not
// need, which are then never inflated.
func parseNPZ(path string, b []byte, check func(*NPZ) error) (*NPZ, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid .npz (zip) archive: %w", path, err)
	}
	z := &NPZ{Path: path, Arrays: map[string]*Array{}}
	members := map[string]*zip.File{}
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".npy") {
			continue // np.savez writes only .npy members; ignore anything else
		}
		name := strings.TrimSuffix(f.Name, ".npy")
		if _, dup := z.Arrays[name]; dup {
			return nil, fmt.Errorf("%s: array %s: duplicate member", path, name)
		}
		if f.Method != zip.Store && f.Method != zip.Deflate {
			return nil, fmt.Errorf("%s: array %s: unsupported zip compression method %d (want stored or deflate)", path, name, f.Method)
		}
		a, err := readMember(f, len(b), smallMember)
		if err != nil {
			return nil, fmt.Errorf("%s: array %s: %w", path, name, err)
		}
		z.Arrays[name], members[name] = a, f
	}
	if check != nil {
		if err := check(z); err != nil {
			return nil, err
		}
	}
	var need int64
	for _, a := range z.Arrays {
		if !a.loaded {
			need += int64(a.Len()) * int64(a.dtype().itemsize)
		}
	}
	// Each array is inflated and then converted to the type its reader
	// keeps (a copy at least as large), so reading takes twice its bytes.
	if avail, ok := availableMemory(); ok && 2*need > avail {
		return nil, fmt.Errorf("%s: its arrays hold %s, and reading them takes twice that, more than the %s of memory available", path, byteSize(need), byteSize(avail))
	}
	for _, name := range z.Names() {
		if a := z.Arrays[name]; !a.loaded {
			full, err := readMember(members[name], len(b), math.MaxInt)
			if err != nil {
				return nil, fmt.Errorf("%s: array %s: %w", path, name, err)
			}
			z.Arrays[name] = full
		}
	}
	return z, nil
}

// availableMemory bounds what an archive may inflate (a variable for tests).
var availableMemory = sysstat.AvailableMemory

// byteSize formats n bytes for a message.
func byteSize(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// readMember reads the member's .npy header and, when its data is at most
// upTo bytes, the data too (the array is then loaded).
func readMember(f *zip.File, archiveSize, upTo int) (*Array, error) {
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	h, err := readNPYHeader(r)
	if err != nil {
		return nil, err
	}
	// The zip headers' sizes can lie, so bound the claim by the archive's
	// real size too.
	limit := min(f.CompressedSize64, uint64(archiveSize))
	if f.Method == zip.Deflate {
		limit = limit*maxDeflateRatio + 1024
	}
	if uint64(h.nbytes) > limit {
		return nil, fmt.Errorf("truncated: shape %v of %s needs %d data bytes, member holds at most %d", h.shape, h.descr, h.nbytes, limit)
	}
	a := &Array{Name: strings.TrimSuffix(f.Name, ".npy"), DType: h.descr, Shape: h.shape}
	if h.nbytes > upTo {
		return a, nil
	}
	// One allocation of the declared size: the claim is bounded above by
	// what the member's compressed size can hold, and parseNPZ has checked
	// the archive's total against the memory available. Growing a buffer
	// as data arrived instead took up to four times the array's size.
	data := make([]byte, h.nbytes)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("truncated: shape %v of %s needs %d data bytes: %w", h.shape, h.descr, h.nbytes, noEOF(err))
	}
	// Reading to the end makes archive/zip verify the member's CRC-32, which
	// catches corruption that leaves the sizes intact.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, fmt.Errorf("corrupt member: %w", noEOF(err))
	}
	a.data, a.loaded = data, true
	return a, nil
}

// ReadNPZ reads an .npz file.
func ReadNPZ(path string) (*NPZ, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseNPZ(path, b)
}

// noEOF turns a bare EOF, which reads as success to some callers, into
// io.ErrUnexpectedEOF: in a file that should continue it means truncation.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// halfToFloat32 widens an IEEE 754 half-precision value (numpy's float16,
// <f2) to float32 exactly: subnormals, infinities and NaN included.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0: // zero
		return math.Float32frombits(sign)
	}
	// Subnormal: frac·2^-24, normalised for float32.
	e := uint32(127 - 15 + 1)
	for frac&0x400 == 0 {
		frac <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
}

// whatItIs says, after an error about a file of the wrong kind, what its
// first bytes head look like: a known format, or text; "" otherwise.
func whatItIs(head []byte) string {
	if what := filekind.Known(head, -1); what != "" {
		return "; it is " + what
	}
	for _, c := range head {
		if c < ' ' && c != '\t' && c != '\n' && c != '\r' || c > '~' {
			return ""
		}
	}
	return fmt.Sprintf("; it begins with text, %q", head)
}
