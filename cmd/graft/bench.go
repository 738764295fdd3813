package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/graft-gnn/graft/internal/bench"
)

func init() {
	commands["bench"] = command{"measure kernels (bench kernels), training epochs (bench train) or samplers (bench sample)", runBench}
}

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprintln(stderr, "usage: graft bench kernels [--json] [--quick] [--reps N]")
		fmt.Fprintln(stderr, "       graft bench train [--json] [--quick] [--reps N] [--nodes N] [--data-dir DIR] [--cpuprofile FILE]")
		fmt.Fprintln(stderr, "       graft bench train --sampler S [--batch-size B] [--layers L] [--hidden H] [--graph G]... [--json] [--quick]")
		fmt.Fprintln(stderr, "       graft bench sample [--json] [--quick] [--graph G]... [--sampler S]... [--batch-size B] [--batches N] [--cpuprofile FILE]")
		fmt.Fprintf(stderr, "\n%s.\n\nRun 'graft bench <kernels|train|sample> -h' for one's flags.\n", upperFirst(commands["bench"].summary))
		if len(args) == 0 {
			return usageError{fmt.Errorf("missing what to benchmark: kernels, train or sample")}
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "kernels":
		return benchKernels(args[1:], stdout, stderr)
	case "train":
		return benchTrain(args[1:], stdout, stderr)
	case "sample":
		return benchSample(args[1:], stdout, stderr)
	}
	return unknownName("benchmark", args[0], []string{"kernels", "train", "sample"})
}

func benchKernels(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench kernels")
	asJSON := fs.Bool("json", false, "print one JSON object per kernel")
	quick := fs.Bool("quick", false, "small sizes, for a smoke test")
	reps := fs.Int("reps", 0, "timed repetitions per kernel, the best reported"+quickDefault(bench.DefaultKernelConfig().Reps, bench.QuickKernelConfig().Reps))
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	cfg := bench.DefaultKernelConfig()
	if *quick {
		cfg = bench.QuickKernelConfig()
	}
	if err := setInt(fs, "reps", *reps, 1, &cfg.Reps); err != nil {
		return err
	}
	var triad float64
	if !*asJSON {
		fmt.Fprintln(stdout, textHeader(kernelColumns))
	}
	enc := json.NewEncoder(stdout)
	var encErr error
	bench.Kernels(cfg, func(r bench.KernelResult) {
		if *asJSON {
			if err := enc.Encode(r); err != nil && encErr == nil {
				encErr = err
			}
			return
		}
		shape, rate, allocs := "", "", fmt.Sprintf("%.0f", r.AllocsPerCall)
		switch {
		case r.Kernel == "triad":
			triad = r.GBps
			shape = fmt.Sprintf("3×%d float32", r.Length)
			rate = fmt.Sprintf("%.1f GB/s", r.GBps)
			allocs = "" // not measured: the triad is the bandwidth reference
		case r.GFLOPS > 0:
			shape = fmt.Sprintf("%d×%d·%d×%d", r.M, r.K, r.K, r.N)
			rate = fmt.Sprintf("%.1f GFLOP/s", r.GFLOPS)
		default:
			shape = fmt.Sprintf("%d rows %d nnz w%d", r.Rows, r.NNZ, r.Width)
			rate = fmt.Sprintf("%.1f GB/s", r.GBps)
		}
		frac, vs := "", ""
		if r.TriadFraction > 0 && triad > 0 {
			frac = fmt.Sprintf("%.2f", r.TriadFraction)
		}
		if r.VsFP32 > 0 {
			vs = fmt.Sprintf("%.2f×", r.VsFP32)
		}
		fmt.Fprintln(stdout, textRow(kernelColumns, r.Kernel, r.Impl, shape, formatSeconds(r.Seconds), rate, frac, vs, allocs))
	})
	return encErr
}

// kernelColumns are the columns of graft bench kernels' text output: the
// best time of one call and its rate; the fraction of the triad's
// bandwidth for the memory-bound SpMM; a bf16 kernel's speed over the
// float32 one's on the same shape.
var kernelColumns = []textColumn{
	{title: "kernel", width: 12}, {title: "impl", width: 10}, {title: "shape", width: 30},
	{title: "time", width: 10, right: true}, {title: "rate", width: 15, right: true},
	{title: "of triad", width: 8, right: true}, {title: "vs fp32", width: 7, right: true},
	{title: "allocs", width: 6, right: true},
}
