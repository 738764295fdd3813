package nn

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/maruel/safetensors"
)

// SaveParams writes params to w in the safetensors format: float32 tensors
// under their names, weights in PyTorch's [out, in] layout, so that
// torch's load_state_dict accepts them for the equivalent PyG module.
// metadata (may be nil) is stored in the header.
func SaveParams(w io.Writer, params []*Param, metadata map[string]string) error {
	f := safetensors.File{Metadata: metadata}
	for _, p := range params {
		data := p.Value.Data
		if p.Transposed {
			data = transposed(data, p.Value.Rows, p.Value.Cols)
		}
		buf := make([]byte, 4*len(data))
		for i, v := range data {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		shape := make([]uint64, len(p.Shape))
		for i, s := range p.Shape {
			shape[i] = uint64(s)
		}
		f.Tensors = append(f.Tensors, safetensors.Tensor{Name: p.Name, DType: safetensors.F32, Shape: shape, Data: buf})
	}
	return f.Serialize(w)
}

// LoadParams reads params from safetensors data produced by SaveParams (or
// by PyTorch for the equivalent module). The file must hold exactly the
// parameters' names, each with its shape and dtype F32; it returns the
// metadata.
func LoadParams(r io.Reader, params []*Param) (map[string]string, error) {
	buf, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("nn: reading parameters: %w", err)
	}
	if what := notModelFile(buf); what != "" {
		return nil, fmt.Errorf("nn: parameters are not a graft model file, the safetensors file graft train --save writes: %s", what)
	}
	f, err := safetensors.Parse(buf)
	if err != nil {
		return nil, fmt.Errorf("nn: parameters are not a valid safetensors file: %w", err)
	}
	byName := make(map[string]*safetensors.Tensor, len(f.Tensors))
	for i := range f.Tensors {
		byName[f.Tensors[i].Name] = &f.Tensors[i]
	}
	for _, p := range params {
		t, ok := byName[p.Name]
		if !ok {
			return nil, fmt.Errorf("nn: parameter file lacks %s (was it saved from a different model?)", p.Name)
		}
		if t.DType != safetensors.F32 {
			return nil, fmt.Errorf("nn: parameter %s has dtype %s, want F32", p.Name, t.DType)
		}
		if !slices.Equal(t.Shape, shapeU64(p.Shape)) {
			return nil, fmt.Errorf("nn: parameter %s has shape %v in the file, the model wants %v", p.Name, t.Shape, p.Shape)
		}
	}
	if len(f.Tensors) != len(params) {
		for name := range byName {
			if !slices.ContainsFunc(params, func(p *Param) bool { return p.Name == name }) {
				return nil, fmt.Errorf("nn: parameter file has %s, which the model lacks (was it saved from a different model?)", name)
			}
		}
		return nil, fmt.Errorf("nn: parameter file has %d tensors for %d parameters (duplicate names?)", len(f.Tensors), len(params))
	}
	for _, p := range params {
		t := byName[p.Name]
		data := make([]float32, len(p.Value.Data))
		for i := range data {
			data[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
		if p.Transposed {
			data = transposed(data, p.Value.Cols, p.Value.Rows)
		}
		copy(p.Value.Data, data)
	}
	return f.Metadata, nil
}

// SaveParamsFile writes params to the named file (see SaveParams).
func SaveParamsFile(path string, params []*Param, metadata map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("nn: %w", err)
	}
	w := bufio.NewWriter(f)
	err = SaveParams(w, params, metadata)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("nn: saving parameters to %s: %w", path, err)
	}
	return nil
}

// LoadParamsFile reads params from the named file (see LoadParams).
func LoadParamsFile(path string, params []*Param) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	defer f.Close()
	md, err := LoadParams(f, params)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return md, nil
}

func shapeU64(s []int) []uint64 {
	out := make([]uint64, len(s))
	for i, v := range s {
		out[i] = uint64(v)
	}
	return out
}

// transposed returns the transpose of the rows×cols row-major data.
func transposed(data []float32, rows, cols int) []float32 {
	out := make([]float32, len(data))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[j*rows+i] = data[i*cols+j]
		}
	}
	return out
}
