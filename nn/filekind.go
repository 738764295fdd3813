package nn

import "github.com/graft-gnn/graft/internal/filekind"

// notModelFile says what buf is when it cannot be a safetensors file, the
// format graft train --save writes, and "" when its start is one's: 8
// bytes giving the length of a JSON header, which begins with '{' and fits
// in the file. Known formats are named, text is quoted, and other bytes
// are shown in hex.
func notModelFile(buf []byte) string {
	if filekind.Safetensors(buf, int64(len(buf))) {
		return ""
	}
	what := filekind.Describe(buf, int64(len(buf)))
	if filekind.Known(buf, int64(len(buf))) == "" && len(buf) >= 9 {
		what += ", where a model file has the length of its JSON header and then '{'"
	}
	return what
}
