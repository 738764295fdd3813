package filekind

import (
	"encoding/binary"
	"strings"
	"testing"
)

func safetensorsStart(header string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(b, header...)
}

func TestDescribe(t *testing.T) {
	st := safetensorsStart(`{"__metadata__":{}}`)
	for _, tc := range []struct {
		name string
		head []byte
		size int64
		want string
	}{
		{"npy", []byte("\x93NUMPY\x01\x00v\x00{'descr'"), -1, `it is a NumPy .npy array (it begins with "\x93NUMPY")`},
		{"png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), -1, "it is a PNG image"},
		{"zip", []byte("PK\x03\x04\x14\x00\x00\x00"), -1, "it is a zip archive"},
		{"safetensors", st, int64(len(st)), "it is a safetensors file"},
		{"safetensors of unknown size", st, -1, "it is a safetensors file"},
		{"text", []byte("node,label\n0,1\n"), -1, `it begins with text, "node,label\n0,1\n"`},
		{"bytes", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, -1, "it begins with the bytes 01 02 03 04 05 06 07 08 09 0a"},
		{"short", []byte{1, 2}, -1, "it holds only 2 bytes, 01 02"},
		{"empty", nil, -1, "it is empty"},
	} {
		if got := Describe(tc.head, tc.size); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want it to start %q", tc.name, got, tc.want)
		}
	}
	// A length that does not fit in the file is no safetensors file.
	if Safetensors(st, int64(len(st))-1) || Safetensors(st[:8], -1) {
		t.Error("Safetensors accepts a header longer than the file")
	}
}

// Text is never binary, even when it begins as a format's magic text
// does; a NUL, or a format's magic bytes that are not text, are binary.
func TestBinary(t *testing.T) {
	for _, text := range []string{"0 1\n1 2\n", "GIF8 alice\n", "%PDF,3\n", "BZh bob\n", "id,label\r\nä,1\n", ""} {
		if Binary([]byte(text), -1) {
			t.Errorf("%q: binary, want text", text)
		}
	}
	for _, bin := range []string{"0 1\n\x00", "\x89PNG\r\n\x1a\n", "\x93NUMPY", "\xff\xfei\x00d\x00", "\x80\x02}q\x00"} {
		if !Binary([]byte(bin), -1) {
			t.Errorf("%q: text, want binary", bin)
		}
	}
}
