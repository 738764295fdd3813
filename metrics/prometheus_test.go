package metrics

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape fetches /metrics and returns each sample line as series → value,
// where series is the name with its labels as exposed (sorted by name).
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample line %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return samples
}

func TestPrometheusServesEpochs(t *testing.T) {
	p, err := ServePrometheus("127.0.0.1:0", PrometheusOptions{ConstLabels: map[string]string{"run": "t1", "rank": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// A second sink in the same process: each has its own registry, so
	// their metrics do not collide.
	other, err := ServePrometheus("127.0.0.1:0", PrometheusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	r := NewRecorder(p)
	epochs := []Epoch{
		{Epoch: 1, Loss: 1.5, TrainAcc: 0.4, ValAcc: 0.3, TestAcc: 0.35, ValLoss: 1.6, Ratio: 8, EpochSeconds: 0.5,
			BytesFwd: 1000, BytesBwd: 2000, BytesGrad: 300, BytesSetup: 4096, ComputeSeconds: 0.25, CommSeconds: 0.125, CodecSeconds: 0.0625,
			WorkerCompute: []float64{0.25, 0.125}, RSSBytes: 1 << 20},
		{Epoch: 2, Loss: 0.5, TrainAcc: 0.9, ValAcc: 0.8, TestAcc: 0.75, ValLoss: 0.7, Ratio: 4, EpochSeconds: 0.75,
			BytesFwd: 500, BytesBwd: 1000, BytesGrad: 300, BytesParams: 700, ComputeSeconds: 0.5, CommSeconds: 0.25, CodecSeconds: 0.0625,
			WorkerCompute: []float64{0.5, 0.25}, RSSBytes: 2 << 20},
	}
	for _, e := range epochs {
		if err := r.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	got := scrape(t, p.Addr())
	const l = `rank="0",run="t1"`
	want := map[string]float64{
		"graft_epoch{" + l + "}":                                   2,
		"graft_loss{" + l + "}":                                    0.5,
		"graft_train_acc{" + l + "}":                               0.9,
		"graft_val_acc{" + l + "}":                                 0.8,
		"graft_test_acc{" + l + "}":                                0.75,
		"graft_val_loss{" + l + "}":                                0.7,
		"graft_compression_ratio{" + l + "}":                       4,
		"graft_epoch_seconds{" + l + "}":                           0.75,
		"graft_rss_bytes{" + l + "}":                               2 << 20,
		`graft_bytes_total{direction="fwd",` + l + "}":             1500,
		`graft_bytes_total{direction="bwd",` + l + "}":             3000,
		`graft_bytes_total{direction="grad",` + l + "}":            600,
		`graft_bytes_total{direction="setup",` + l + "}":           4096,
		`graft_bytes_total{direction="params",` + l + "}":          700,
		"graft_compute_seconds_total{" + l + "}":                   0.75,
		"graft_comm_seconds_total{" + l + "}":                      0.375,
		"graft_codec_seconds_total{" + l + "}":                     0.125,
		"graft_worker_compute_seconds_total{" + l + `,worker="0"}`: 0.75,
		"graft_worker_compute_seconds_total{" + l + `,worker="1"}`: 0.375,
	}
	for series, v := range want {
		if g, ok := got[series]; !ok {
			t.Errorf("no sample %s", series)
		} else if g != v {
			t.Errorf("%s = %g, want %g", series, g, v)
		}
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("no go_goroutines: the Go runtime's metrics are missing")
	}
	if len(scrapeGraft(scrape(t, other.Addr()))) != 0 {
		t.Error("the second sink serves epochs it never recorded")
	}

	addr := p.Addr()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	client := http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		t.Error("the server still answers after Close")
	}
}

// scrapeGraft keeps the graft_ samples that hold a value: a labelled
// counter with no children has no sample, an unset gauge reads 0.
func scrapeGraft(samples map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range samples {
		if strings.HasPrefix(k, "graft_") && v != 0 {
			out[k] = v
		}
	}
	return out
}

func TestPrometheusListenAddress(t *testing.T) {
	tests := []struct {
		addr          string
		allInterfaces bool
		wantErr       string
	}{
		{"127.0.0.1:0", false, ""},
		{"localhost:0", false, ""},
		{"[::1]:0", false, ""},
		{":9464", false, "would serve every network interface"},
		{"0.0.0.0:9464", false, "would serve every network interface"},
		{"[::]:9464", false, "would serve every network interface"},
		{"0.0.0.0:9464", true, ""},
		{":9464", true, ""},
		{"127.0.0.1", false, "missing port"},
		{"", false, "missing port"},
		{"127.0.0.1:http-alt-nonexistent", false, "unknown port"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s allInterfaces=%v", tt.addr, tt.allInterfaces), func(t *testing.T) {
			_, err := listenAddr(tt.addr, tt.allInterfaces)
			errorAsWanted(t, err, tt.wantErr)
		})
	}
}

// Bad labels from the caller are errors, not panics.
func TestPrometheusBadLabels(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
	}{
		{"label value not UTF-8", map[string]string{"run": "\xff"}},
		{"reserved label name", map[string]string{"__name__": "x"}},
		{"clashes with a metric's own label", map[string]string{"worker": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ServePrometheus("127.0.0.1:0", PrometheusOptions{ConstLabels: tt.labels})
			if err == nil {
				p.Close()
				t.Fatalf("labels %v accepted", tt.labels)
			}
		})
	}
}

// An epoch a counter cannot count is refused whole: nothing of it shows.
func TestPrometheusRefusesUncountableEpoch(t *testing.T) {
	p, err := ServePrometheus("127.0.0.1:0", PrometheusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	bad := []Epoch{
		{Epoch: 1, BytesFwd: -1},
		{Epoch: 1, BytesSetup: -1},
		{Epoch: 1, BytesParams: -1},
		{Epoch: 1, CommSeconds: -0.5},
		{Epoch: 1, WorkerCompute: []float64{1, -1}},
	}
	for _, e := range bad {
		if err := p.Record(e); err == nil {
			t.Errorf("Record(%+v) accepted", e)
		}
	}
	if got := scrapeGraft(scrape(t, p.Addr())); len(got) != 0 {
		t.Errorf("refused epochs left samples: %v", got)
	}
}

// The byte counters are served, at zero, before the first epoch: a scrape
// between two of Record's updates never finds the epoch without them.
func TestPrometheusServesByteCountersFromTheStart(t *testing.T) {
	p, err := ServePrometheus("127.0.0.1:0", PrometheusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := scrape(t, p.Addr())
	for _, d := range []string{"fwd", "bwd", "grad"} {
		if v, ok := got[`graft_bytes_total{direction="`+d+`"}`]; !ok || v != 0 {
			t.Errorf("graft_bytes_total{direction=%q} = %v (served %v) before any epoch, want 0", d, v, ok)
		}
	}
}

// A scrape sees whole epochs: while epochs are recorded as fast as they
// can be, every scrape's bytes are those of the epoch it reports.
func TestPrometheusScrapesWholeEpochs(t *testing.T) {
	p, err := ServePrometheus("127.0.0.1:0", PrometheusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for k := 1; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			// Epoch k has sent k bytes forward and 2k backward in all.
			if err := p.Record(Epoch{Epoch: k, BytesFwd: 1, BytesBwd: 2}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 50 {
		s := scrape(t, p.Addr())
		epoch, fwd, bwd := s["graft_epoch"], s[`graft_bytes_total{direction="fwd"}`], s[`graft_bytes_total{direction="bwd"}`]
		if fwd != epoch || bwd != 2*epoch {
			t.Errorf("scraped epoch %v with %v bytes forward and %v backward", epoch, fwd, bwd)
		}
	}
	close(stop)
	<-done
}
