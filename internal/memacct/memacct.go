package memacct

import "sync/atomic"

// Kind is what a buffer is for.
type Kind int

const (
	// Activations are the layers' stored outputs and gradients, dropout
	// masks, evaluation's per-node outputs, and the per-node quantities
	// parts in one process share.
	Activations Kind = iota
	// Communication are the buffers of the halo exchange and of the
	// feature fetches of data-parallel training, and the state codecs
	// keep per stream of messages.
	Communication
	// Features are feature rows a trainer holds beyond its input's: the
	// dense copies data-parallel workers make of sparse features, and the
	// bf16 copies of float32 ones.
	Features
	// Operators are the aggregation operators built from the graph's
	// structure: a part's local normalised adjacencies, the whole graph's
	// when a layer first needs them, their transposes and their copies
	// with columns renumbered to a shared buffer's rows.
	Operators
	kinds
)

var held, peak [kinds]atomic.Int64

// Add records that buffers of kind k grew by delta bytes (negative when
// released).
func Add(k Kind, delta int64) {
	n := held[k].Add(delta)
	for {
		p := peak[k].Load()
		if n <= p || peak[k].CompareAndSwap(p, n) {
			return
		}
	}
}

// Grown records a buffer's change of capacity from was to now elements of
// size bytes each: for the growth paths of reusable buffers.
func Grown(k Kind, was, now, size int) {
	if now != was {
		Add(k, int64(now-was)*int64(size))
	}
}

// Held is the bytes kind k holds now.
func Held(k Kind) int64 { return held[k].Load() }

// Peak is the most kind k has held at once since the process started or
// the last Mark.
func Peak(k Kind) int64 { return peak[k].Load() }

// Marker is the start of a measurement: see Mark.
type Marker struct{ base [kinds]int64 }

// Mark starts a new measurement of every kind: it lowers each kind's peak
// to what the kind holds now, so that the marker's Peak is the most the
// buffers grown since then held at once. Buffers of models that were let
// go are still counted as held (nothing reports their release), and the
// marker takes them out.
func Mark() Marker {
	var m Marker
	for k := range kinds {
		m.base[k] = held[k].Load()
		peak[k].Store(m.base[k])
	}
	return m
}

// Peak is the most kind k's buffers grown since the mark held at once.
func (m Marker) Peak(k Kind) int64 { return max(peak[k].Load()-m.base[k], 0) }
