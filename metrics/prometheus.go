package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// PrometheusOptions configure ServePrometheus.
type PrometheusOptions struct {
	// ConstLabels are attached to every graft_ metric, e.g. a run id and
	// the rank, so several runs can be scraped into one database.
	ConstLabels map[string]string
	// AllInterfaces allows a wildcard listen address (an empty host,
	// 0.0.0.0 or [::]). Without it the caller must name a host, so a run
	// never offers its metrics to the whole network by accident.
	AllInterfaces bool
}

// Prometheus is a sink serving the run's latest epoch and its running
// totals at /metrics, from a registry of its own (the process-wide default
// registry is left alone, so tests and embedding programs can run several).
type Prometheus struct {
	server *http.Server
	addr   net.Addr
	served chan error
	close  sync.Once
	mu     sync.Mutex // held by Record and by a scrape's gathering

	epoch, loss, trainAcc, valAcc, testAcc, valLoss prometheus.Gauge
	ratio, epochSeconds, stepSeconds, rss           prometheus.Gauge
	bytes                                           *prometheus.CounterVec
	compute, comm, codec, emulated                  prometheus.Counter
	workerCompute                                   *prometheus.CounterVec
}

// ServePrometheus listens on addr (HOST:PORT; port 0 picks a free one, see
// Addr) and serves /metrics until Close.
func ServePrometheus(addr string, opts PrometheusOptions) (*Prometheus, error) {
	tcpAddr, err := listenAddr(addr, opts.AllInterfaces)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	p, err := newPrometheus(reg, opts.ConstLabels)
	if err != nil {
		return nil, err
	}
	ln, err := net.ListenTCP("tcp", tcpAddr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	// A scrape sees one epoch whole: Record holds mu while it updates.
	gather := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return reg.Gather()
	})
	mux.Handle("/metrics", promhttp.HandlerFor(gather, promhttp.HandlerOpts{}))
	// A scraper that stalls in its headers must not hold a connection open.
	p.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	p.addr = ln.Addr()
	p.served = make(chan error, 1)
	go func() { p.served <- p.server.Serve(ln) }()
	return p, nil
}

// listenAddr resolves addr and refuses a wildcard host unless allowed.
func listenAddr(addr string, allInterfaces bool) (*net.TCPAddr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen address %q: %w", addr, err)
	}
	tcpAddr, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen address %q: %w", addr, err)
	}
	if !allInterfaces && (host == "" || tcpAddr.IP == nil || tcpAddr.IP.IsUnspecified()) {
		return nil, fmt.Errorf("metrics: listen address %q would serve every network interface; name a host such as 127.0.0.1:%s, or allow all interfaces explicitly", addr, port)
	}
	return tcpAddr, nil
}

// registrar registers collectors and keeps the first error, so building
// the metrics reads as a list. (promauto would panic on a bad label
// instead, and the labels come from the caller.)
type registrar struct {
	reg    *prometheus.Registry
	labels prometheus.Labels
	err    error
}

func (r *registrar) register(c prometheus.Collector) {
	if err := r.reg.Register(c); err != nil && r.err == nil {
		r.err = err
	}
}

func (r *registrar) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: r.labels})
	r.register(g)
	return g
}

func (r *registrar) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: r.labels})
	r.register(c)
	return c
}

func (r *registrar) counterVec(name, help, label string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: r.labels}, []string{label})
	r.register(c)
	return c
}

func newPrometheus(reg *prometheus.Registry, labels map[string]string) (*Prometheus, error) {
	r := &registrar{reg: reg, labels: labels}
	p := &Prometheus{
		epoch:         r.gauge("graft_epoch", "Last recorded epoch (1-based)."),
		loss:          r.gauge("graft_loss", "Training loss of the last epoch's step."),
		trainAcc:      r.gauge("graft_train_acc", "Training accuracy after the last epoch."),
		valAcc:        r.gauge("graft_val_acc", "Validation accuracy after the last epoch."),
		testAcc:       r.gauge("graft_test_acc", "Test accuracy after the last epoch."),
		valLoss:       r.gauge("graft_val_loss", "Validation loss after the last epoch."),
		ratio:         r.gauge("graft_compression_ratio", "Compression ratio of the last epoch's boundary exchange (1: uncompressed)."),
		epochSeconds:  r.gauge("graft_epoch_seconds", "Wall time of the last epoch."),
		stepSeconds:   r.gauge("graft_step_seconds", "Wall time of the last epoch's training step."),
		rss:           r.gauge("graft_rss_bytes", "Resident memory after the last epoch."),
		bytes:         r.counterVec("graft_bytes_total", "Bytes sent by all workers: halo activations (fwd), halo gradients (bwd), gradient all-reduce (grad), the evaluation passes' halo rows (eval), sampled structure (structure) and input features (features) of data-parallel mini-batches, data-parallel training's one-off exchanges before the first epoch (setup), and the parameters a parameter server sends back to its workers (params; the gradients pushed to it are grad).", "direction"),
		compute:       r.counter("graft_compute_seconds_total", "Slowest worker's compute time, summed over epochs."),
		comm:          r.counter("graft_comm_seconds_total", "Slowest worker's communication time, summed over epochs."),
		codec:         r.counter("graft_codec_seconds_total", "Slowest worker's compression time, summed over epochs."),
		emulated:      r.counter("graft_emulated_seconds_total", "Epoch time on the emulated link, summed over epochs."),
		workerCompute: r.counterVec("graft_worker_compute_seconds_total", "Each worker's compute time, summed over epochs.", "worker"),
	}
	if r.err != nil {
		return nil, fmt.Errorf("metrics: %w", r.err)
	}
	for _, d := range []string{"fwd", "bwd", "grad"} { // served as 0 from the start, not from the first epoch on
		p.bytes.WithLabelValues(d)
	}
	r.register(collectors.NewGoCollector())
	r.register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if r.err != nil {
		return nil, fmt.Errorf("metrics: %w", r.err)
	}
	return p, nil
}

// Addr is the address the server listens on, with the port it was given
// when asked for port 0.
func (p *Prometheus) Addr() string { return p.addr.String() }

// Record publishes e. Counters only go up, so e's bytes and seconds must
// be finite and non-negative; an epoch that breaks that is refused whole.
func (p *Prometheus) Record(e Epoch) error {
	if err := checkCounted(e); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loss.Set(e.Loss)
	p.trainAcc.Set(e.TrainAcc)
	p.valAcc.Set(e.ValAcc)
	p.testAcc.Set(e.TestAcc)
	p.valLoss.Set(e.ValLoss)
	p.ratio.Set(e.Ratio)
	p.epochSeconds.Set(e.EpochSeconds)
	p.stepSeconds.Set(e.StepSeconds)
	p.rss.Set(float64(e.RSSBytes))
	p.bytes.WithLabelValues("fwd").Add(float64(e.BytesFwd))
	p.bytes.WithLabelValues("bwd").Add(float64(e.BytesBwd))
	p.bytes.WithLabelValues("grad").Add(float64(e.BytesGrad))
	if e.BytesStructure > 0 || e.BytesFeatures > 0 {
		p.bytes.WithLabelValues("structure").Add(float64(e.BytesStructure))
		p.bytes.WithLabelValues("features").Add(float64(e.BytesFeatures))
	}
	if e.BytesSetup > 0 {
		p.bytes.WithLabelValues("setup").Add(float64(e.BytesSetup))
	}
	if e.BytesEval > 0 {
		p.bytes.WithLabelValues("eval").Add(float64(e.BytesEval))
	}
	if e.BytesParams > 0 {
		p.bytes.WithLabelValues("params").Add(float64(e.BytesParams))
	}
	p.compute.Add(e.ComputeSeconds)
	p.comm.Add(e.CommSeconds)
	p.codec.Add(e.CodecSeconds)
	p.emulated.Add(e.EmulatedSeconds)
	for k, c := range e.WorkerCompute {
		p.workerCompute.WithLabelValues(strconv.Itoa(k)).Add(c)
	}
	p.epoch.Set(float64(e.Epoch))
	return nil
}

// checkCounted refuses values a Prometheus counter cannot take (it panics
// on a negative one).
func checkCounted(e Epoch) error {
	type counted struct {
		name  string
		value float64
	}
	values := []counted{
		{"bytes_fwd", float64(e.BytesFwd)}, {"bytes_bwd", float64(e.BytesBwd)}, {"bytes_grad", float64(e.BytesGrad)},
		{"bytes_structure", float64(e.BytesStructure)}, {"bytes_features", float64(e.BytesFeatures)},
		{"bytes_setup", float64(e.BytesSetup)}, {"bytes_params", float64(e.BytesParams)}, {"bytes_eval", float64(e.BytesEval)},
		{"compute_seconds", e.ComputeSeconds}, {"comm_seconds", e.CommSeconds},
		{"codec_seconds", e.CodecSeconds}, {"emulated_seconds", e.EmulatedSeconds},
	}
	for k, c := range e.WorkerCompute {
		values = append(values, counted{fmt.Sprintf("worker_compute_seconds[%d]", k), c})
	}
	for _, c := range values {
		if !(c.value >= 0) || math.IsInf(c.value, 1) {
			return fmt.Errorf("metrics: epoch %d: %s is %g; a counter needs a finite value ≥ 0", e.Epoch, c.name, c.value)
		}
	}
	return nil
}

// Close stops the server, letting a scrape in progress finish (for up to
// five seconds); later calls do nothing.
func (p *Prometheus) Close() error {
	var err error
	p.close.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = p.server.Shutdown(ctx)
		if served := <-p.served; !errors.Is(served, http.ErrServerClosed) {
			err = errors.Join(err, served)
		}
	})
	return err
}
