package compress

// quantRatio is stochastic quantisation whose bit width follows the ratio
// schedule, the VARCO idea applied to quantisers: at ratio r it sends
// 32/r bits per value rounded down to a width it has (8, 4, 2, 1), and
// below r = 2 the values as they are, so a falling schedule widens the
// codes as training goes (exp:16:4:1.5 sends 2 bits for the first third
// of training, 4 for the second, 8 for the last).
type quantRatio struct {
	q    map[int]*quantizer
	none none
}

func init() {
	Register("quantr", func() Compressor {
		return &quantRatio{q: map[int]*quantizer{8: {bits: 8}, 4: {bits: 4}, 2: {bits: 2}, 1: {bits: 1}}}
	})
	defaultSchedules["quantr"] = "exp:16:4:1.5"
}

func (*quantRatio) Name() string { return "quantr" }

// FixedRatio is 0: it follows the schedule.
func (*quantRatio) FixedRatio(int) float64 { return 0 }

// Caps: none beyond Encode and Decode, as the quantisers.
func (*quantRatio) Caps() Caps { return Caps{} }

// at is the codec of a message at ratio.
func (c *quantRatio) at(ratio float64) Compressor {
	if b := (&Delta{}).BitsAt(ratio); b < 32 {
		return c.q[b]
	}
	return c.none
}

func (c *quantRatio) Encode(dst []byte, x []float32, rows, width int, ratio float64, key Key) []byte {
	return c.at(ratio).Encode(dst, x, rows, width, ratio, key)
}

func (c *quantRatio) Decode(out []float32, rows, width int, ratio float64, key Key, src []byte) error {
	return c.at(ratio).Decode(out, rows, width, ratio, key, src)
}

// rowLayout is the layout of the quantiser in force at ratio, if any.
func (c *quantRatio) rowLayout(rows, width int, ratio float64, backward bool) (prefix, rowBytes, header int) {
	if q, ok := c.at(ratio).(rowLayouter); ok {
		return q.rowLayout(rows, width, ratio, backward)
	}
	return 0, 0, 0
}
