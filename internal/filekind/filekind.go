package filekind

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// formats are the starts of files that are given to graft by mistake, and
// what they are.
var formats = []struct{ magic, what string }{
	{"\x93NUMPY", "a NumPy .npy array"},
	{"PK\x03\x04", "a zip archive (a NumPy .npz, or a PyTorch .pt/.pth file as torch.save writes it)"},
	{"PK\x05\x06", "an empty zip archive"},
	{"\x80\x02", "a Python pickle (a PyTorch .pt/.pth file of the legacy format)"},
	{"\x80\x03", "a Python pickle (a PyTorch .pt/.pth file of the legacy format)"},
	{"\x80\x04", "a Python pickle"},
	{"\x80\x05", "a Python pickle"},
	{"\x89HDF\r\n\x1a\n", "an HDF5 file (a Keras .h5 model?)"},
	{"\x89PNG\r\n\x1a\n", "a PNG image"},
	{"\xff\xd8\xff", "a JPEG image"},
	{"GIF8", "a GIF image"},
	{"%PDF", "a PDF document"},
	{"\x1f\x8b", "gzip-compressed data"},
	{"(\xb5/\xfd", "zstd-compressed data"},
	{"BZh", "bzip2-compressed data"},
	{"\xfd7zXZ\x00", "xz-compressed data"},
	{"\x7fELF", "an executable (ELF)"},
	{"\xff\xfe", "UTF-16 text (save it as UTF-8)"},
	{"\xfe\xff", "UTF-16 text (save it as UTF-8)"},
	{"GRAFTCK1", "a graft checkpoint (graft train --checkpoint-dir writes them; resume with --resume)"},
	{"GRAFTPT1", "a graft partition file (graft partition --out writes them)"},
}

// Known names the format head, a file's first bytes, begins with, or
// returns "" when it knows none. A safetensors file, graft's model file,
// is told by its structure: 8 bytes giving the length of a JSON header
// that begins with '{' and fits in head or beyond (size is the file's
// size, or -1 when unknown).
func Known(head []byte, size int64) string {
	for _, f := range formats {
		if bytes.HasPrefix(head, []byte(f.magic)) {
			return f.what
		}
	}
	if Safetensors(head, size) {
		return "a safetensors file (a model graft train --save writes, or PyTorch's)"
	}
	return ""
}

// Safetensors reports whether head, the start of a file of size bytes (-1:
// unknown), begins as a safetensors file does.
func Safetensors(head []byte, size int64) bool {
	if len(head) < 9 || head[8] != '{' {
		return false
	}
	n := binary.LittleEndian.Uint64(head)
	return n >= 2 && (size < 0 && n < 1<<32 || size >= 8 && n <= uint64(size-8))
}

// Binary reports whether head holds bytes text never does: a NUL, or the
// start of a known format whose magic bytes are not text ("%PDF" could
// begin a line of text; the rest of a PDF holds NULs).
func Binary(head []byte, size int64) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	for _, f := range formats {
		if bytes.HasPrefix(head, []byte(f.magic)) && textStart([]byte(f.magic+"        ")) == "" {
			return true
		}
	}
	return false
}

// Describe says what head, the start of a file of size bytes (-1:
// unknown), looks like, for an error about a file of the wrong kind: its
// known format and magic bytes, or its start as text, or in hex.
func Describe(head []byte, size int64) string {
	if what := Known(head, size); what != "" {
		magic := head[:min(len(head), 8)]
		for _, f := range formats {
			if bytes.HasPrefix(head, []byte(f.magic)) {
				magic = []byte(f.magic)
			}
		}
		return fmt.Sprintf("it is %s (it begins with %q)", what, magic)
	}
	if text := textStart(head); text != "" {
		return fmt.Sprintf("it begins with text, %q", text)
	}
	switch {
	case len(head) == 0:
		return "it is empty"
	case len(head) < 9:
		return fmt.Sprintf("it holds only %d bytes, % x", len(head), head)
	}
	return fmt.Sprintf("it begins with the bytes % x", head[:min(len(head), 12)])
}

// textStart is the start of head (up to 40 bytes) when its first 8 bytes
// are printable text, else "".
func textStart(head []byte) string {
	if len(head) < 8 {
		return ""
	}
	for _, c := range head[:8] {
		if c < ' ' && c != '\t' && c != '\n' && c != '\r' || c > '~' {
			return ""
		}
	}
	return string(head[:min(len(head), 40)])
}
