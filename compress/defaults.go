package compress

import "math"

// Auto is the spec `--compress auto` names: graft's recipe for the halo
// exchange, delta coding at 2 bits with error feedback and no skipping,
// entropy-coded, applied to the last layer's exchange too
// (halo.Config.CompressLast). In graft's experiments (docs/delta.md:
// SAGE-64, 100 epochs, 3 seeds) the delta coding matched full
// communication's accuracy in 7 of the 8 cells measured (Amazon Computers
// and Coauthor CS, 4 and 8 parts, random and multilevel) at 0.085–0.096×
// of its halo bytes; the entropy stage is lossless and sends 0.58–0.73× of
// the delta coding's bytes (docs/compression.md).
const Auto = "auto"

// AutoCodec is the codec Auto stands for: entropy:delta:2:0:0, or
// entropy:delta:r:0:0 (the width from the ratio) when the run gives a
// ratio schedule.
func AutoCodec(scheduled bool) string {
	if scheduled {
		return "entropy:delta:r:0:0"
	}
	return "entropy:delta:2:0:0"
}

// namedSchedules are schedules kept by name: settings from the literature
// that are not any codec's default.
var namedSchedules = map[string]string{
	// The VARCO authors' scripts: linear from 128 down to 1.5, reached
	// after a fifth of training. It never returns to full communication,
	// and in graft's experiments it lost accuracy in half the cells
	// (docs/varco.md).
	"varco-paper": "linear:128:1.5:5",
}

// ScheduleNames lists the named schedules ParseSchedule accepts besides
// the forms, with what each stands for.
func ScheduleNames() map[string]string {
	m := make(map[string]string, len(namedSchedules))
	for k, v := range namedSchedules {
		m[k] = v
	}
	return m
}

// defaultSchedules are the schedules of the codecs whose ratio matters
// (the column selectors), each one that matched full communication's
// accuracy (within 0.5 points, paired by seed) in graft's experiments
// (docs/varco.md; scripts/varco.sh, SAGE-64, 100 epochs, 3 seeds);
// subspace's on Amazon Computers, not on the synthetic graph:
//
//   - truncate exp:128:1:5, in all 24 cells (worst −0.29), at 0.85× of
//     full's halo bytes; the authors' linear:128:1.5:5 in 12 of 24.
//   - topk exp:128:1:5 on Amazon Computers with 4 and 8 random parts
//     (+0.07, +0.05), where linear:128:1:5 missed at 8 parts (−0.74).
//   - subspace linear:4:1:5 there (−0.27, −0.23), where linear:128:1:5
//     (−1.20, −2.00) and exp:128:1:5 (−0.57 at 4 parts) miss. No schedule
//     measured brings subspace to full accuracy on the synthetic sbm-arxiv
//     graph (scripts/subspace.sh: 4 random parts, seeds 1–3, each Δ
//     paired with a full run of the same build, docs/varco/subspace):
//     linear:4:1:5 −20.35 ± 9.86, linear:4:1:10 −19.69 ± 12.59,
//     linear:2:1:5 −9.23 ± 5.28, and linear:1.25:1:5, which saves 2% of
//     the bytes, −2.67 ± 2.05 (−1.24, −5.02, −1.74 by seed); on Amazon
//     Computers, 4 random parts, the same four match (−0.15 to +0.07).
//     The codec, not the schedule, is the cause: k random columns of w,
//     scaled by w/k, add noise of variance (w/k − 1)·x² to each value x,
//     the least (averaged over directions) of any unbiased estimate made
//     linearly from k numbers chosen without looking at the values, and
//     on sbm-arxiv, whose first 20–30 iterations sit on a loss plateau
//     and whose accuracy at iteration 100 says how soon training left
//     it, that noise costs points at any ratio above 1. linear:4:1:5,
//     which compresses most of the four, stays the default.
//
// Each reaches r = 1 by a fifth of training. The quantisers, bf16 and
// none ignore the ratio.
var defaultSchedules = map[string]string{
	"truncate": "exp:128:1:5",
	"topk":     "exp:128:1:5",
	"subspace": "linear:4:1:5",
}

// DefaultSchedule is the schedule a codec runs under when none is given:
// for truncate, subspace and topk one that reached full-communication
// accuracy in graft's experiments (subspace's on Amazon Computers only:
// see defaultSchedules), fixed:1 for every other codec (they do not use
// the ratio).
func DefaultSchedule(codec string) string {
	if s, ok := defaultSchedules[codec]; ok {
		return s
	}
	return "fixed:1"
}

// Floor is the lowest ratio s reaches (at least 1, where compression
// ends): the ratio it holds for the rest of training once reached.
// Schedules graft does not know are taken to be at their floor already.
func Floor(s Schedule) float64 {
	var f float64
	switch s := s.(type) {
	case Fixed:
		f = float64(s)
	case Linear:
		f = s.Min
	case Exponential:
		f = s.Min
	case Step:
		f = s.Min
	case *Plateau:
		f = s.Min
	default:
		return math.Inf(1)
	}
	return max(f, 1)
}

// AtFloor reports whether ratio, the ratio a training step ran at, is s's
// floor: from then on the schedule no longer changes what the model sees.
func AtFloor(s Schedule, ratio float64) bool {
	return max(ratio, 1) <= Floor(s)
}

// FloorStep is the first step (0-based) at which a schedule that depends
// on the step alone is at its floor, searching up to steps; ok is false
// when it does not get there in time or depends on what it observes (the
// adaptive schedule).
func FloorStep(s Schedule, steps int) (step int, ok bool) {
	if _, adaptive := s.(Observer); adaptive {
		return 0, false
	}
	for t := range steps {
		if AtFloor(s, s.Ratio(t)) {
			return t, true
		}
	}
	return 0, false
}
