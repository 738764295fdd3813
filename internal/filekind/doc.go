// Package filekind names the format of a file from its first bytes, for
// errors about files given in the wrong place: a PNG as a model file, a
// model file as an edge list, a zip archive as a features CSV. It knows
// the magic bytes of the formats people have at hand beside graft's
// inputs (NumPy, zip, pickle, HDF5, images, compressed data, graft's own
// binary files) and tells text from binary bytes.
package filekind
