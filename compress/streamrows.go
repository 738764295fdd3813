package compress

// Short rows, a 4-byte header and at most 16 bytes of codes (delta
// coding's rows of width·bits ≤ 128, or any codec's row layout of that
// shape), split into an entropy stage's streams and joined
// back (gatherShortRows, scatterShortRows) 16 rows at a time by AVX-512
// byte permutes where the CPU has them (VBMI's VPERMB): a group's 16 rows
// of 4 header bytes and w ≤ 16 bytes of codes are at most 320 bytes, five
// 64-byte windows of the message; their header bytes are one vector (byte
// j of row r in lane 16j+r) and their codes at most four. Each vector is
// put together from the windows, or each window from the vectors, by one
// masked permute per pair; shortRowsPlan holds their indices and masks
// for a width.

// shortRowsPlan is the permutes of a group of 16 rows of w bytes of
// codes. The kernels read it at fixed offsets (streamrows_amd64.s), which
// TestShortRowsPlanLayout checks.
type shortRowsPlan struct {
	hdrIdx   [64]byte     // gather: lane 16j+r ← window byte of row r's header byte j
	codeIdx  [4][64]byte  // gather: lane L of codes vector m ← its window byte
	outIdx   [5][64]byte  // scatter: window byte L ← a lane of the header or a codes vector
	hdrMask  [5]uint64    // gather: the header lanes window s holds
	codeMask [4][5]uint64 // gather: the lanes of codes vector m window s holds
	winMask  [5]uint64    // the bytes of window s within the group's rows
	codeOut  [4]uint64    // the bytes of codes vector m within the group's codes
	outHdr   [5]uint64    // scatter: the bytes of window s from the header vector
	outCode  [5][4]uint64 // scatter: the bytes of window s from codes vector m
}

// newShortRowsPlan is the plan of rows of 4 header bytes and w bytes of
// codes, 1 ≤ w ≤ 16.
func newShortRowsPlan(w int) *shortRowsPlan {
	p := &shortRowsPlan{}
	rb := 4 + w
	for o := range 16 * rb { // the group's bytes, row r's byte c at o
		r, c := o/rb, o%rb
		s, l := o/64, o%64
		p.winMask[s] |= 1 << l
		if c < 4 {
			lane := 16*c + r
			p.hdrIdx[lane] = byte(l)
			p.hdrMask[s] |= 1 << lane
			p.outIdx[s][l] = byte(lane)
			p.outHdr[s] |= 1 << l
			continue
		}
		co := r*w + c - 4 // its place among the group's codes
		m, lane := co/64, co%64
		p.codeIdx[m][lane] = byte(l)
		p.codeMask[m][s] |= 1 << lane
		p.codeOut[m] |= 1 << lane
		p.outIdx[s][l] = byte(lane)
		p.outCode[s][m] |= 1 << l
	}
	return p
}

// shortRowsPlans are the plans of each width 1–16.
var shortRowsPlans = func() (p [17]*shortRowsPlan) {
	for w := 1; w <= 16; w++ {
		p[w] = newShortRowsPlan(w)
	}
	return p
}()
