package main

import (
	"bufio"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// "A Prometheus endpoint test scrapes /metrics during a short run and finds
// graft_epoch, graft_loss and the byte counters."
func TestTrainServesPrometheusMetrics(t *testing.T) {
	r, w := io.Pipe()
	done := make(chan int)
	go func() {
		code := run([]string{"train", "--epochs", "1500", "--patience", "0", "--parts", "2", "--metrics-addr", ":0", "--json"}, io.Discard, w)
		w.Close()
		done <- code
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "serving metrics at "); ok {
				addr <- a
			}
		}
	}()
	var url string
	select {
	case url = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("graft train did not say where it serves metrics")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("serving at %s; an address without a host must mean loopback", url)
	}
	epoch := regexp.MustCompile(`(?m)^graft_epoch(\{[^}]*\})? (\S+)$`)
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("scraping %s: %v (the run ended before any epoch was served?)", url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if m := epoch.FindStringSubmatch(body); m != nil {
			if v, _ := strconv.ParseFloat(m[2], 64); v >= 1 {
				break
			}
		}
	}
	for _, want := range []string{`graft_epoch`, `graft_loss`, `graft_val_acc`, `graft_bytes_total{direction="fwd"}`, `graft_bytes_total{direction="bwd"}`, `graft_bytes_total{direction="grad"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
	if code := <-done; code != 0 {
		t.Fatalf("graft train exited with %d", code)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("the endpoint still answers after the run")
	}
}
