package compress

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Schedule gives the compression ratio in force at each training step.
type Schedule interface {
	Ratio(step int) float64
	String() string
}

// Observer is a schedule that adapts to training: the trainer reports the
// validation loss after every epoch (the training loss when there is no
// validation set).
type Observer interface {
	Schedule
	Observe(step int, loss float64)
}

// Stateful is a schedule whose ratio depends on what it has observed, not
// on the step alone: a checkpoint keeps its state, so that a resumed run
// continues exactly.
type Stateful interface {
	Schedule
	State() ([]byte, error)
	Restore(state []byte) error
}

// Fixed keeps one ratio throughout.
type Fixed float64

func (f Fixed) Ratio(int) float64 { return float64(f) }
func (f Fixed) String() string    { return fmt.Sprintf("fixed:%g", float64(f)) }

// Linear is the VARCO authors' schedule:
// r_t = max(Max − Slope·t·(Max − Min)/(Steps − 2), Min).
type Linear struct {
	Max, Min, Slope float64
	Steps           int
}

func (l Linear) Ratio(t int) float64 {
	if l.Max <= l.Min {
		return l.Min // and no ∞·0 below
	}
	unit := (l.Max - l.Min) / float64(max(l.Steps-2, 1))
	return max(l.Max-l.Slope*float64(t)*unit, l.Min)
}

func (l Linear) String() string { return fmt.Sprintf("linear:%g:%g:%g", l.Max, l.Min, l.Slope) }

// Exponential decays geometrically from Max to Min over Steps/Slope steps:
// r_t = max(Max·exp(−Slope·t·ln(Max/Min)/(Steps − 2)), Min).
type Exponential struct {
	Max, Min, Slope float64
	Steps           int
}

func (e Exponential) Ratio(t int) float64 {
	rate := e.Slope * math.Log(e.Max/e.Min) / float64(max(e.Steps-2, 1))
	return max(e.Max*math.Exp(-rate*float64(t)), e.Min)
}

func (e Exponential) String() string { return fmt.Sprintf("exp:%g:%g:%g", e.Max, e.Min, e.Slope) }

// Step divides the ratio by Factor every Every steps, down to Min (the
// power-of-two staircase of SAR's compression branch when Factor is 2).
type Step struct {
	Max, Min, Factor float64
	Every            int
}

func (s Step) Ratio(t int) float64 {
	return max(s.Max/math.Pow(s.Factor, float64(t/s.Every)), s.Min)
}

func (s Step) String() string {
	return fmt.Sprintf("step:%g:%g:%d:%g", s.Max, s.Min, s.Every, s.Factor)
}

// Plateau is graft's adaptive schedule: it starts at Max and divides the
// ratio by Factor whenever the observed loss has not improved by at least
// MinDelta (relative) for Patience observations, down to Min. The trainer feeds it
// the validation loss of the uncompressed model (the training loss keeps
// falling at any ratio: a compressed model still fits its training set).
// Compression error is harmless while the model still improves, and is
// what stalls it later; the paper's convergence argument needs the error
// to shrink as the gradient does, which this schedule tracks from the loss
// curve instead of a fixed clock.
type Plateau struct {
	Max, Min, Factor float64
	Patience         int
	MinDelta         float64

	ratio   float64
	best    float64 // lowest loss since the ratio last changed, once seen
	seen    bool
	stalled int
}

// NewPlateau returns a plateau schedule at its starting ratio.
func NewPlateau(maxRatio, minRatio float64, patience int, factor float64) *Plateau {
	return &Plateau{Max: maxRatio, Min: minRatio, Factor: factor, Patience: patience, MinDelta: 1e-3,
		ratio: maxRatio}
}

func (p *Plateau) Ratio(int) float64 { return p.ratio }

func (p *Plateau) Observe(_ int, loss float64) {
	if !p.seen || loss < p.best*(1-p.MinDelta) {
		p.best, p.seen = loss, true
		p.stalled = 0
		return
	}
	p.stalled++
	if p.stalled >= p.Patience && p.ratio > p.Min {
		p.ratio = max(p.ratio/p.Factor, p.Min)
		p.stalled = 0
		p.best = loss // judge the new ratio on its own progress
	}
}

func (p *Plateau) String() string {
	return fmt.Sprintf("adaptive:%g:%g:%d:%g", p.Max, p.Min, p.Patience, p.Factor)
}

// plateauState is what a checkpoint keeps of a Plateau, as JSON.
type plateauState struct {
	Ratio, Best float64
	Seen        bool
	Stalled     int
}

// State makes a Plateau Stateful.
func (p *Plateau) State() ([]byte, error) {
	return json.Marshal(plateauState{p.ratio, p.best, p.seen, p.stalled})
}

// Restore continues from a State.
func (p *Plateau) Restore(b []byte) error {
	var s plateauState
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("compress: adaptive schedule state: %w", err)
	}
	if !(s.Ratio >= p.Min && s.Ratio <= p.Max) || s.Stalled < 0 {
		return fmt.Errorf("compress: adaptive schedule state has ratio %v and %d stalled steps; the schedule runs from %v to %v", s.Ratio, s.Stalled, p.Max, p.Min)
	}
	p.ratio, p.best, p.seen, p.stalled = s.Ratio, s.Best, s.Seen, s.Stalled
	return nil
}

// ParseSchedule reads a schedule from its command-line form; steps is the
// planned number of training steps (the linear and exponential schedules
// are stated relative to it).
//
//	fixed:R                     one ratio
//	linear:RMAX:RMIN:SLOPE      the VARCO authors' linear decay (128:1.5:5 in their scripts)
//	exp:RMAX:RMIN[:SLOPE]       geometric decay
//	step:RMAX:RMIN:EVERY[:FACTOR]  divide by FACTOR (2) every EVERY steps
//	adaptive[:RMAX:RMIN:PATIENCE:FACTOR]  divide on a loss plateau (128:1:5:2)
//	varco-paper                 the VARCO authors' setting, linear:128:1.5:5
func ParseSchedule(spec string, steps int) (Schedule, error) {
	if named, ok := namedSchedules[spec]; ok {
		spec = named
	}
	kind, rest, _ := strings.Cut(spec, ":")
	var args []float64
	if rest != "" {
		for _, f := range strings.Split(rest, ":") {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("schedule %q: %q is not a number", spec, f)
			}
			args = append(args, v)
		}
	}
	need := func(lo, hi int, form string) error {
		if len(args) < lo || len(args) > hi {
			return fmt.Errorf("schedule %q: want %s", spec, form)
		}
		return nil
	}
	ratios := func(rs ...float64) error {
		for _, r := range rs {
			if r < 1 {
				return fmt.Errorf("schedule %q: ratios must be ≥ 1 (1 = no compression)", spec)
			}
		}
		if len(rs) == 2 && rs[1] > rs[0] {
			return fmt.Errorf("schedule %q: the floor %g is above the start %g", spec, rs[1], rs[0])
		}
		return nil
	}
	switch kind {
	case "fixed":
		if err := need(1, 1, "fixed:R"); err != nil {
			return nil, err
		}
		return validated(Fixed(args[0]), ratios(args[0]))
	case "linear":
		if err := need(3, 3, "linear:RMAX:RMIN:SLOPE"); err != nil {
			return nil, err
		}
		if args[2] <= 0 {
			return nil, fmt.Errorf("schedule %q: slope must be positive", spec)
		}
		return validated(Linear{Max: args[0], Min: args[1], Slope: args[2], Steps: steps}, ratios(args[0], args[1]))
	case "exp":
		if err := need(2, 3, "exp:RMAX:RMIN[:SLOPE]"); err != nil {
			return nil, err
		}
		slope := 1.0
		if len(args) == 3 {
			slope = args[2]
		}
		if slope <= 0 {
			return nil, fmt.Errorf("schedule %q: slope must be positive", spec)
		}
		return validated(Exponential{Max: args[0], Min: args[1], Slope: slope, Steps: steps}, ratios(args[0], args[1]))
	case "step":
		if err := need(3, 4, "step:RMAX:RMIN:EVERY[:FACTOR]"); err != nil {
			return nil, err
		}
		factor := 2.0
		if len(args) == 4 {
			factor = args[3]
		}
		if !count(args[2]) || factor <= 1 {
			return nil, fmt.Errorf("schedule %q: EVERY must be a positive integer and FACTOR above 1", spec)
		}
		return validated(Step{Max: args[0], Min: args[1], Every: int(args[2]), Factor: factor}, ratios(args[0], args[1]))
	case "adaptive":
		if len(args) == 0 {
			args = []float64{128, 1, 5, 2}
		}
		if err := need(4, 4, "adaptive[:RMAX:RMIN:PATIENCE:FACTOR]"); err != nil {
			return nil, err
		}
		if !count(args[2]) || args[3] <= 1 {
			return nil, fmt.Errorf("schedule %q: PATIENCE must be a positive integer and FACTOR above 1", spec)
		}
		return validated(NewPlateau(args[0], args[1], int(args[2]), args[3]), ratios(args[0], args[1]))
	}
	return nil, fmt.Errorf("unknown schedule %q (want fixed:R, linear:RMAX:RMIN:SLOPE, exp:RMAX:RMIN[:SLOPE], step:RMAX:RMIN:EVERY[:FACTOR], adaptive[:RMAX:RMIN:PATIENCE:FACTOR] or varco-paper)", spec)
}

// count reports whether v is a whole number of steps, 1 to 2³¹ − 1.
func count(v float64) bool {
	return v >= 1 && v <= math.MaxInt32 && v == math.Trunc(v)
}

func validated(s Schedule, err error) (Schedule, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ScheduleFactory parses spec once and returns a constructor of
// independent schedules: every worker of a run needs its own, since
// adaptive schedules keep state.
func ScheduleFactory(spec string, steps int) (func() Schedule, error) {
	if _, err := ParseSchedule(spec, steps); err != nil {
		return nil, err
	}
	return func() Schedule {
		s, _ := ParseSchedule(spec, steps)
		return s
	}, nil
}
