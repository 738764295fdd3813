package async

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/nn"
)

func TestParseRule(t *testing.T) {
	cases := []struct {
		in   string
		taus []int
		want []float64
		err  string
	}{
		{in: "none", taus: []int{0, 1, 7}, want: []float64{1, 1, 1}},
		{in: "inverse", taus: []int{0, 1, 2, 4}, want: []float64{1, 1, 0.5, 0.25}},
		{in: "linear:0.5", taus: []int{0, 1, 2, 6}, want: []float64{1, 1 / 1.5, 0.5, 0.25}},
		{in: "linear:0", taus: []int{3}, want: []float64{1}},
		{in: "linear:-1", err: "C must be"},
		{in: "linear:x", err: "C must be"},
		{in: "drop", taus: []int{0, 1, 5}, want: []float64{1, 0, 0}},
		{in: "linear", err: "want none, inverse, linear:C or drop"},
		{in: "sqrt", err: "want none, inverse, linear:C or drop"},
	}
	for _, tc := range cases {
		r, err := ParseRule(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRule(%q) = %v; want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || r.String() != tc.in {
			t.Fatalf("ParseRule(%q) = %v, %v", tc.in, r, err)
		}
		for i, tau := range tc.taus {
			if got := r.Scale(tau); math.Abs(got-tc.want[i]) > 1e-15 {
				t.Errorf("%s: Scale(%d) = %v, want %v", tc.in, tau, got, tc.want[i])
			}
		}
	}
}

func TestHistogram(t *testing.T) {
	var h Histogram
	if h.Mean() != 0 || h.Quantile(0.5) != 0 || h.Max() != 0 {
		t.Fatal("an empty histogram is not all zero")
	}
	// 0 ×50, 1 ×30, 2 ×19, 9 ×1
	for tau, n := range map[int]int{0: 50, 1: 30, 2: 19, 9: 1} {
		for range n {
			h.Add(tau)
		}
	}
	if h.Count() != 100 || h.Mean() != (30+38+9)/100.0 {
		t.Fatalf("count %d mean %v", h.Count(), h.Mean())
	}
	for _, q := range []struct {
		q    float64
		want int
	}{{0.5, 0}, {0.51, 1}, {0.8, 1}, {0.81, 2}, {0.99, 2}, {1, 9}} {
		if got := h.Quantile(q.q); got != q.want {
			t.Errorf("Quantile(%v) = %d, want %d", q.q, got, q.want)
		}
	}
	if h.Max() != 9 {
		t.Errorf("Max %d", h.Max())
	}
	var later Histogram
	later.Merge(&h)
	later.Add(3)
	later.Sub(&h)
	if later.Count() != 1 || later.Max() != 3 || later.Mean() != 3 {
		t.Errorf("the difference of two totals: count %d max %d mean %v", later.Count(), later.Max(), later.Mean())
	}
}

// shard returns a shard of two parameters under plain SGD.
func shard(t *testing.T, rule string, maxStale int) *Shard {
	t.Helper()
	r, err := ParseRule(rule)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := NewShard(Settings{Optimizer: nn.OptimizerConfig{Algorithm: nn.SGD, LR: 0.5}, Rule: r, MaxStaleness: maxStale},
		[][]float32{{1, 2}, {3}}, []float64{0, 0})
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

// A gradient's staleness is the shard's version minus the version it was
// computed from; the rule scales its step; past the bound it is dropped
// and counted, and the version does not move.
func TestShardStalenessRuleAndBound(t *testing.T) {
	sh := shard(t, "inverse", 2)
	steps := []struct {
		from    int
		tau     int
		applied bool
		want    []float32 // values after
	}{
		{from: 0, tau: 0, applied: true, want: []float32{0.5, 1.5, 2.5}},     // lr 0.5
		{from: 0, tau: 1, applied: true, want: []float32{0, 1, 2}},           // lr 0.5/1
		{from: 0, tau: 2, applied: true, want: []float32{-0.25, 0.75, 1.75}}, // lr 0.5/2
		{from: 0, tau: 3, applied: false, want: []float32{-0.25, 0.75, 1.75}},
		{from: 3, tau: 0, applied: true, want: []float32{-0.75, 0.25, 1.25}},
	}
	for i, s := range steps {
		tau, applied, err := sh.Apply([]float32{1, 1, 1}, s.from)
		if err != nil || tau != s.tau || applied != s.applied {
			t.Fatalf("step %d: τ %d applied %v err %v; want τ %d applied %v", i, tau, applied, err, s.tau, s.applied)
		}
		got := sh.AppendValues(nil)
		for j := range got {
			if math.Abs(float64(got[j]-s.want[j])) > 1e-6 {
				t.Fatalf("step %d: values %v, want %v", i, got, s.want)
			}
		}
	}
	c := sh.Counters()
	if sh.Version() != 4 || c.Updates != 4 || c.Dropped != 1 || c.Staleness.Count() != 5 || c.Staleness.Max() != 3 {
		t.Fatalf("version %d, counters %+v", sh.Version(), c)
	}
	if _, _, err := sh.Apply([]float32{1, 1}, 0); err == nil {
		t.Error("a gradient of the wrong length was applied")
	}
	if _, _, err := sh.Apply([]float32{1, 1, 1}, 5); err == nil {
		t.Error("a gradient from a future version was applied")
	}
	// Without a bound nothing is dropped; linear:1 halves a τ = 1 step.
	sh = shard(t, "linear:1", -1)
	sh.Apply([]float32{0, 0, 0}, 0)
	if tau, applied, _ := sh.Apply([]float32{2, 2, 2}, 0); tau != 1 || !applied {
		t.Fatal("τ = 1 gradient not applied")
	}
	if got := sh.AppendValues(nil); got[0] != 0.5 {
		t.Errorf("linear:1 at τ 1: value %v, want 1 − 0.5·½·2 = 0.5", got[0])
	}
}

func TestPlanBalancesWholeParameters(t *testing.T) {
	// Largest first to the lighter shard: 100→0, 60→1, 50→1, 10→0, 5→0 (tie).
	sizes := []int{100, 10, 60, 50, 5}
	plan := Plan(sizes, 2)
	seen := map[int]bool{}
	load := make([]int, 2)
	for k, p := range plan {
		for _, i := range p {
			if seen[i] {
				t.Fatalf("parameter %d in two shards", i)
			}
			seen[i] = true
			load[k] += sizes[i]
		}
	}
	if len(seen) != len(sizes) || load[0] != 115 || load[1] != 110 {
		t.Fatalf("plan %v: loads %v", plan, load)
	}
	if p := Plan(sizes, 1); len(p) != 1 || len(p[0]) != 5 || p[0][0] != 0 || p[0][4] != 4 {
		t.Fatalf("one shard: %v", p)
	}
}

// Messages survive the wire, and malformed ones are errors, not panics.
func TestWire(t *testing.T) {
	grad := []float32{1.5, -2, 0, 3e-8}
	r, err := decodeRequest(request{kind: kindPush, version: 7, grad: grad}.encode(), nil)
	if err != nil || r.kind != kindPush || r.version != 7 || len(r.grad) != 4 || r.grad[3] != 3e-8 {
		t.Fatalf("request: %+v, %v", r, err)
	}
	p, err := decodeReply(reply{version: 3, pushes: 9, epochSize: 4, stop: true, values: grad}.encode(), make([]float32, 1))
	if err != nil || p.version != 3 || p.pushes != 9 || p.epochSize != 4 || !p.stop || len(p.values) != 4 || p.values[0] != 1.5 {
		t.Fatalf("reply: %+v, %v", p, err)
	}
	var h Histogram
	h.Add(0)
	h.Add(4)
	c, err := decodeCounters(encodeCounters(Counters{Staleness: h, Dropped: 2, Updates: 5, Pushes: 7, EpochSize: 3, BytesGrad: 1 << 40, BytesParams: 11}))
	if err != nil || c.Dropped != 2 || c.Updates != 5 || c.Pushes != 7 || c.EpochSize != 3 || c.BytesGrad != 1<<40 || c.BytesParams != 11 ||
		c.Staleness.Count() != 2 || c.Staleness.Max() != 4 || c.Staleness.Counts()[4] != 1 {
		t.Fatalf("counters: %+v, %v", c, err)
	}
	for _, b := range [][]byte{nil, {kindAlive + 1, 0, 0, 0, 0, 0, 0, 0, 0}, {kindPush, 0, 0, 0, 0, 0, 0, 0, 0, 1}} {
		if _, err := decodeRequest(b, nil); err == nil {
			t.Errorf("request %v decoded", b)
		}
	}
	if w, err := decodeReply(reply{wait: true}.encode(), nil); err != nil || !w.wait || w.stop || len(w.values) != 0 {
		t.Fatalf("a reply that says wait: %+v, %v", w, err)
	}
	if a, err := decodeRequest(request{kind: kindAlive}.encode(), nil); err != nil || a.kind != kindAlive {
		t.Fatalf("a request that says alive: %+v, %v", a, err)
	}
	for _, b := range [][]byte{make([]byte, 24), append(make([]byte, 24), 3), make([]byte, 27)} {
		if _, err := decodeReply(b, nil); err == nil {
			t.Errorf("reply %v decoded", b)
		}
	}
	for _, n := range []int{4, 24, 48, 60} {
		b := encodeCounters(Counters{})
		if n < len(b) {
			b = b[:n]
		} else {
			b = append(b, make([]byte, n-len(b))...)
		}
		if _, err := decodeCounters(b); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%d bytes of counters: %v", n, err)
		}
	}
	negative := encodeCounters(Counters{})
	negative[55] = 0x80 // BytesParams < 0
	if _, err := decodeCounters(negative); err == nil {
		t.Error("counters with negative bytes decoded")
	}
	// The counters' format has a version: another is refused, saying so.
	for _, v := range []uint64{0, 1, 2, countersVersion + 1} {
		b := encodeCounters(Counters{Updates: 1})
		binary.LittleEndian.PutUint64(b, countersTag|v)
		want := fmt.Sprintf("counters of format version %d; this build reads version %d", v, countersVersion)
		if _, err := decodeCounters(b); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("counters of version %d: %v; want %q", v, err, want)
		}
	}
	// Counters of the format before the tag began with Dropped: one that
	// had dropped 1 update, 1 being the version, is refused all the same.
	var untagged []byte
	for _, n := range []uint64{1, 40, 42, 6, 100, 64, 64, 3, 2} {
		untagged = binary.LittleEndian.AppendUint64(untagged, n)
	}
	if _, err := decodeCounters(untagged); err == nil || !strings.Contains(err.Error(), "without this build's format tag") {
		t.Errorf("counters of the untagged format: %v", err)
	}
}

// A large shard updates its parameters in parallel: the same bits on one
// thread as on several.
// Rule drop keeps only fresh gradients, and counts the others dropped.
func TestShardDropsStaleGradients(t *testing.T) {
	sh := shard(t, "drop", -1)
	for i, s := range []struct {
		from    int
		applied bool
	}{{0, true}, {0, false}, {1, true}, {1, false}, {0, false}, {2, true}} {
		if tau, applied, err := sh.Apply([]float32{1, 1, 1}, s.from); err != nil || applied != s.applied || tau != sh.Version()-s.from-btoi(applied) {
			t.Fatalf("gradient %d from version %d: τ %d applied %v err %v; want applied %v", i, s.from, tau, applied, err, s.applied)
		}
	}
	c := sh.Counters()
	if got := sh.AppendValues(nil); c.Updates != 3 || c.Dropped != 3 || got[0] != 1-3*0.5 {
		t.Fatalf("counters %+v, values %v; want 3 updates of lr 0.5, 3 dropped", c, got)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// With PerUpdate K the shard keeps K gradients and applies their mean as
// one update: the same bits as one Apply of the mean, summed in arrival
// order and scaled as ps-sync's step takes it, with Adam's moments and
// weight decay; staleness counts updates, and the rule weights each
// gradient in the sum rather than scaling the learning rate.
func TestShardAppliesTheMeanOfKGradients(t *testing.T) {
	values := [][]float32{{0.3, -1.2, 2}, {0.7}}
	decays := []float64{0.1, 0}
	opt := nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01}
	grads := [][]float32{{0.1, -0.2, 0.3, 1e-3}, {-0.4, 0.25, 0.05, 2}, {0.9, 0.01, -0.7, 0.3}, {1e-5, 0.5, 0.125, -1}}
	newShard := func(rule string, k int) *Shard {
		r, err := ParseRule(rule)
		if err != nil {
			t.Fatal(err)
		}
		sh, err := NewShard(Settings{Optimizer: opt, Rule: r, MaxStaleness: -1, PerUpdate: k}, values, decays)
		if err != nil {
			t.Fatal(err)
		}
		return sh
	}
	mean := func(gs [][]float32, w []float32) []float32 {
		m := make([]float32, len(gs[0]))
		for i, g := range gs {
			for j := range g {
				m[j] += w[i] * g[j]
			}
		}
		inv := 1 / float32(len(gs))
		for j := range m {
			m[j] *= inv
		}
		return m
	}
	sh, ref := newShard("none", 2), newShard("none", 1)
	for u := range 2 {
		for _, g := range grads[2*u : 2*u+2] {
			if tau, applied, err := sh.Apply(g, u); tau != 0 || !applied || err != nil {
				t.Fatalf("update %d: τ %d applied %v err %v", u, tau, applied, err)
			}
		}
		ref.Apply(mean(grads[2*u:2*u+2], []float32{1, 1}), u)
	}
	if a, b := sh.AppendValues(nil), ref.AppendValues(nil); sh.Version() != 2 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("version %d, values %v; want 2 and the mean's %v", sh.Version(), a, b)
	}
	for j, v := range sh.AppendValues(nil) {
		if w := ref.AppendValues(nil)[j]; v != w {
			t.Fatalf("value %d: %v, want %v bit for bit", j, v, w)
		}
	}
	// One gradient of version 0 arrives after the first update: τ 1, and
	// inverse weights it 1/1; one τ 2 gradient is weighted 1/2.
	sh, ref = newShard("inverse", 2), newShard("none", 1)
	sh.Apply(grads[0], 0)
	sh.Apply(grads[1], 0)
	ref.Apply(mean(grads[:2], []float32{1, 1}), 0)
	sh.Apply(grads[2], 1)
	if tau, _, _ := sh.Apply(grads[3], 0); tau != 1 {
		t.Fatalf("τ %d, want 1", tau)
	}
	ref.Apply(mean(grads[2:], []float32{1, 1}), 1)
	sh.Apply(grads[0], 2)
	if tau, _, _ := sh.Apply(grads[1], 0); tau != 2 || sh.Version() != 3 {
		t.Fatalf("τ %d at version %d, want 2 and 3", tau, sh.Version())
	}
	ref.Apply(mean(grads[:2], []float32{1, 0.5}), 2)
	for j, v := range sh.AppendValues(nil) {
		if w := ref.AppendValues(nil)[j]; v != w {
			t.Fatalf("value %d: %v, want %v bit for bit", j, v, w)
		}
	}
	if _, err := NewShard(Settings{Optimizer: opt, PerUpdate: -1}, values, decays); err == nil {
		t.Error("−1 gradients an update accepted")
	}
}

func TestShardUpdateIgnoresThreads(t *testing.T) {
	values := [][]float32{make([]float32, 40000), make([]float32, 30000), make([]float32, 7)}
	grad := make([]float32, 70007)
	for i := range grad {
		grad[i] = float32(i%97) - 48
	}
	var got [2][]float32
	for k, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		sh, err := NewShard(Settings{Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01}, MaxStaleness: -1}, values, []float64{5e-4, 0, 0})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			sh.Apply(grad, sh.Version())
		}
		runtime.GOMAXPROCS(prev)
		got[k] = sh.AppendValues(nil)
	}
	for i := range got[0] {
		if got[0][i] != got[1][i] || got[0][i] == 0 && grad[i] != 0 {
			t.Fatalf("value %d: %v on one thread, %v on four", i, got[0][i], got[1][i])
		}
	}
}
