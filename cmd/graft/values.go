package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/train"
)

// intValue is an integer flag's name and value, for wantAtLeast.
type intValue struct {
	name string
	v    int
}

// wantAtLeast refuses the first value below min: a value out of range is an
// error, never replaced by a default.
func wantAtLeast(min int, values ...intValue) error {
	for _, x := range values {
		if x.v < min {
			return usageError{fmt.Errorf("--%s %d: want %d or more", x.name, x.v, min)}
		}
	}
	return nil
}

// models are the models graft train builds, in the order help lists them.
var models = []string{"gcn", "sage", "gat"}

// presetDefault describes the default that train.PresetFor gives a flag,
// as its -h text ends: " (default 2)" when every model (of only, if given)
// has the same value, else " (default gcn 16, sage 32, gat 8)".
func presetDefault(get func(train.Preset) float64, only ...string) string {
	names := models
	if len(only) > 0 {
		names = only
	}
	parts := make([]string, len(names))
	same := true
	var first string
	for i, m := range names {
		p, err := train.PresetFor(m)
		if err != nil {
			panic(err) // models lists only models PresetFor knows
		}
		v := strconv.FormatFloat(get(p), 'g', -1, 64)
		parts[i] = m + " " + v
		if i == 0 {
			first = v
		}
		same = same && v == first
	}
	if same {
		return " (default " + first + ")"
	}
	return " (default " + strings.Join(parts, ", ") + ")"
}

// applyPreset sets the preset's hyperparameters that the command line gives
// and checks them: out-of-range values are errors, not a reason to fall
// back on the preset. Flags not given keep the model's values.
func (o *trainOptions) applyPreset(fs *flag.FlagSet, p *train.Preset) error {
	given := func(name string) bool { return flagSet(fs, name) }
	for _, f := range []struct {
		name string
		v    int
		dst  *int
		min  int
	}{
		{"layers", o.layers, &p.Layers, 1}, {"hidden", o.hidden, &p.Hidden, 1}, {"heads", o.heads, &p.Heads, 1},
		{"epochs", o.epochs, &p.Epochs, 1}, {"patience", o.patience, &p.Patience, 0},
	} {
		if !given(f.name) {
			continue
		}
		if err := wantAtLeast(f.min, intValue{f.name, f.v}); err != nil {
			return err
		}
		*f.dst = f.v
	}
	if given("lr") {
		if !(o.lr > 0) || math.IsInf(o.lr, 0) {
			return fmt.Errorf("--lr %v: want a positive learning rate", o.lr)
		}
		p.LR = o.lr
	}
	if given("weight-decay") {
		if !(o.weightDecay >= 0) || math.IsInf(o.weightDecay, 0) {
			return fmt.Errorf("--weight-decay %v: want 0 or more", o.weightDecay)
		}
		p.WeightDecay = o.weightDecay
	}
	if given("dropout") {
		if !(o.dropout >= 0 && o.dropout < 1) {
			return fmt.Errorf("--dropout %v: want a rate in [0, 1)", o.dropout)
		}
		p.Dropout = o.dropout
	}
	if o.normalize.set {
		p.Normalize = o.normalize.value
	}
	return nil
}

// setInt copies an int flag the command line gives into dst, after checking
// that it is at least min; a flag not given leaves dst, the configuration's
// default, as it is.
func setInt(fs *flag.FlagSet, name string, v, min int, dst *int) error {
	if !flagSet(fs, name) {
		return nil
	}
	if err := wantAtLeast(min, intValue{name, v}); err != nil {
		return err
	}
	*dst = v
	return nil
}

// quickDefault ends the -h text of a flag whose default --quick changes.
func quickDefault(full, quick int) string {
	if full == quick {
		return fmt.Sprintf(" (default %d)", full)
	}
	return fmt.Sprintf(" (default %d, %d with --quick)", full, quick)
}
