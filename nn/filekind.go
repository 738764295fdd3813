package nn

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// knownFormats are the starts of files that people give --model-file by
// mistake, and what they are.
var knownFormats = []struct{ magic, what string }{
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
	{"\x7fELF", "an executable (ELF)"},
	{"GRAFTCK1", "a graft checkpoint (graft train --checkpoint-dir writes them; resume with --resume)"},
	{"GRAFTPT1", "a graft partition file (graft partition --out writes them)"},
}

// notModelFile says what buf is when it cannot be a safetensors file, the
// format graft train --save writes, and "" when its start is one's: 8
// bytes giving the length of a JSON header, which begins with '{' and fits
// in the file. Known formats are named, text is quoted, and other bytes
// are shown in hex.
func notModelFile(buf []byte) string {
	if len(buf) >= 9 {
		if n := binary.LittleEndian.Uint64(buf); n >= 2 && n <= uint64(len(buf)-8) && buf[8] == '{' {
			return ""
		}
	}
	for _, f := range knownFormats {
		if bytes.HasPrefix(buf, []byte(f.magic)) {
			return fmt.Sprintf("it is %s (it begins with %q)", f.what, f.magic)
		}
	}
	if text := textStart(buf); text != "" {
		// A CSV, JSON or log file given by mistake.
		return fmt.Sprintf("it begins with text, %q", text)
	}
	if len(buf) == 0 {
		return "it is empty"
	}
	if len(buf) < 9 {
		return fmt.Sprintf("it holds only %d bytes, % x", len(buf), buf)
	}
	return fmt.Sprintf("it begins with the bytes % x, where a model file has the length of its JSON header and then '{'", buf[:min(len(buf), 12)])
}

// textStart is the start of buf (up to 40 bytes) when its first 8 bytes
// are printable text, else "".
func textStart(buf []byte) string {
	if len(buf) < 8 {
		return ""
	}
	for _, c := range buf[:8] {
		if c < ' ' && c != '\t' && c != '\n' && c != '\r' || c > '~' {
			return ""
		}
	}
	return string(buf[:min(len(buf), 40)])
}
