package nn

import (
	"fmt"
	"math"
)

// Schedule scales the base learning rate by Factor(step), where step counts
// the optimiser steps already taken (one per epoch in full-graph training).
type Schedule interface {
	Factor(step int) float64
}

// Constant keeps the base learning rate.
type Constant struct{}

func (Constant) Factor(int) float64 { return 1 }

// StepDecay multiplies the rate by Gamma every StepSize steps (PyTorch's
// StepLR).
type StepDecay struct {
	StepSize int
	Gamma    float64
}

func (s StepDecay) Factor(step int) float64 {
	return math.Pow(s.Gamma, float64(step/max(1, s.StepSize)))
}

// Cosine anneals the rate from the base to MinFactor·base over Steps steps
// along half a cosine, then stays there (PyTorch's CosineAnnealingLR without
// restarts).
type Cosine struct {
	Steps     int
	MinFactor float64
}

func (c Cosine) Factor(step int) float64 {
	t := min(float64(step)/float64(max(1, c.Steps)), 1)
	return c.MinFactor + (1-c.MinFactor)*(1+math.Cos(math.Pi*t))/2
}

// ParseSchedule returns the schedule named "constant", "step" (decay by
// gamma every stepSize steps) or "cosine" (over total steps).
func ParseSchedule(name string, stepSize int, gamma float64, total int) (Schedule, error) {
	switch name {
	case "constant", "":
		return Constant{}, nil
	case "step":
		if stepSize < 1 || gamma <= 0 {
			return nil, fmt.Errorf("nn: step schedule needs a positive step size and gamma (got %d, %v)", stepSize, gamma)
		}
		return StepDecay{StepSize: stepSize, Gamma: gamma}, nil
	case "cosine":
		if total < 1 {
			return nil, fmt.Errorf("nn: cosine schedule needs a positive number of steps (got %d)", total)
		}
		return Cosine{Steps: total}, nil
	}
	return nil, fmt.Errorf("nn: unknown schedule %q (want constant, step or cosine)", name)
}
