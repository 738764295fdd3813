// Command accuracy summarises the runs of scripts/accuracy.sh: it reads one
// JSON object per line ({"config", "args", "result": graft train --json})
// from stdin and prints a Markdown table of test accuracy, mean ± standard
// deviation over seeds, per configuration in order of first appearance.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
)

type run struct {
	Config string `json:"config"`
	Args   string `json:"args"`
	Result struct {
		TestAcc    float64 `json:"test_acc"`
		BestValAcc float64 `json:"best_val_acc"`
		Epochs     int     `json:"epochs"`
		EpochMs    float64 `json:"epoch_ms_median"`
	} `json:"result"`
}

type group struct {
	args              string
	test, val, epochs []float64
}

func main() {
	if err := summarise(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
}

func summarise(r io.Reader, w io.Writer) error {
	var order []string
	groups := map[string]*group{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		var x run
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			return fmt.Errorf("line %d: %v", line, err)
		}
		g := groups[x.Config]
		if g == nil {
			g = &group{args: x.Args}
			groups[x.Config] = g
			order = append(order, x.Config)
		}
		g.test = append(g.test, 100*x.Result.TestAcc)
		g.val = append(g.val, 100*x.Result.BestValAcc)
		g.epochs = append(g.epochs, float64(x.Result.Epochs))
	}
	if err := sc.Err(); err != nil {
		return err
	}
	fmt.Fprintln(w, "| configuration | seeds | test accuracy (%) | best val accuracy (%) | epochs run | graft train flags |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	for _, name := range order {
		g := groups[name]
		tm, ts := meanStd(g.test)
		vm, vs := meanStd(g.val)
		em, _ := meanStd(g.epochs)
		fmt.Fprintf(w, "| %s | %d | %.1f ± %.1f | %.1f ± %.1f | %.0f | `%s` |\n", name, len(g.test), tm, ts, vm, vs, em, g.args)
	}
	return nil
}

// meanStd returns the mean and the sample standard deviation.
func meanStd(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	mean := s / float64(len(xs))
	if len(xs) == 1 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}
