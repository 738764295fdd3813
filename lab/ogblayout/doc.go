// Command ogblayout is an experiment tool, not part of graft or its API: it writes a dataset in OGB's raw node-property layout and,
// beside it, the same arrays as an .npz in the heterophilous-graphs layout,
// so that scripts/ogb-read.sh can compare the two readers.
//
//	ogblayout DATASET OUTDIR   writes OUTDIR/ogb/raw/*.csv.gz and OUTDIR/same.npz
package main
