package pipeline

import "fmt"

// Split returns how many layers each of stages stages holds, for a model
// of layers layers: as even as can be, the last stages taking one more
// when they do not divide. In sampled training the first layers are the
// costliest (their blocks have the most source nodes), so the extra layers
// go to the last stages.
func Split(layers, stages int) ([]int, error) {
	if stages < 1 || stages > layers {
		return nil, fmt.Errorf("pipeline: %d stages for a model of %d layers; want 1 to %d", stages, layers, layers)
	}
	out := make([]int, stages)
	for s := range out {
		out[s] = layers / stages
		if s >= stages-layers%stages {
			out[s]++
		}
	}
	return out, nil
}

// bounds returns the first layer of each stage and, last, the layer count,
// checking that every stage holds at least one layer.
func bounds(counts []int, layers int) ([]int, error) {
	cuts := []int{0}
	for s, n := range counts {
		if n < 1 {
			return nil, fmt.Errorf("pipeline: stage %d holds %d layers; want at least 1", s, n)
		}
		cuts = append(cuts, cuts[s]+n)
	}
	if cuts[len(counts)] != layers {
		return nil, fmt.Errorf("pipeline: stages holding %v layers for a model of %d", counts, layers)
	}
	return cuts, nil
}

// Bubble is the share of a mini-batch's time each stage idles under the
// schedule when every stage takes the same time per micro-batch:
// (P−1)/(M+P−1) for P stages and M micro-batches.
func Bubble(stages, micros int) float64 {
	if stages < 1 || micros < 1 {
		return 0
	}
	return float64(stages-1) / float64(micros+stages-1)
}
