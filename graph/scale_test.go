package graph

import (
	"runtime"
	"testing"
	"time"

	"github.com/graft-gnn/graft/internal/sysstat"
)

// Scale checks, as benchmarks so that go test stays quick. Run one at a time,
// so that peak RSS is the generator's own:
//
//	go test -run '^$' -bench SBMScale -benchtime 1x ./graph/
//
// BenchmarkSBMScale fails if the ogbn-products-sized SBM (2.4M nodes, 62M
// stored entries, 100 features) takes over a minute of CPU time or 3 GiB
// peak RSS.

func BenchmarkSBMScale(b *testing.B) {
	cfg := SBMConfig{
		Nodes:        2_400_000,
		Classes:      47,
		AvgDegree:    62_000_000 / 2_400_000.0,
		Homophily:    0.8,
		Features:     100,
		FeatureNoise: 1,
	}
	for b.Loop() {
		cpuBefore := sysstat.CPUTime()
		start := time.Now()
		g, x, _, err := SBM(cfg, 1)
		if err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss, cpuAfter := sysstat.PeakRSS(), sysstat.CPUTime()
		cpu := cpuAfter - cpuBefore
		b.ReportMetric(float64(g.NumEdges()), "entries")
		b.ReportMetric(elapsed.Seconds(), "s/graph")
		b.ReportMetric(cpu.Seconds(), "cpu-s/graph")
		b.ReportMetric(float64(rss)/(1<<30), "GiB-peak-RSS")
		b.ReportMetric(float64(ms.HeapSys)/(1<<30), "GiB-heap-sys")
		b.Logf("SBM %d nodes, %d entries, features %s: %.1fs wall, %.1fs CPU, peak RSS %.2f GiB, GOMAXPROCS %d",
			g.N, g.NumEdges(), x.Shape(), elapsed.Seconds(), cpu.Seconds(), float64(rss)/(1<<30), runtime.GOMAXPROCS(0))
		// The time limit is on CPU time: wall time on a shared machine
		// measures the neighbours, and CPU time under a minute means under a
		// minute of wall time on any idle machine, however many cores.
		if cpu > time.Minute || rss > 3<<30 {
			b.Errorf("SBM at scale: %.1fs CPU and %.2f GiB peak RSS; want under 60s and 3 GiB", cpu.Seconds(), float64(rss)/(1<<30))
		}
	}
}

func BenchmarkRMAT(b *testing.B) {
	for _, bc := range []struct {
		name  string
		scale int
		edges int64
	}{{"1M-16M", 20, 16_000_000}, {"1M-30M", 20, 30_000_000}} {
		b.Run(bc.name, func(b *testing.B) {
			cpuBefore := sysstat.CPUTime()
			for b.Loop() {
				g, err := RMAT(bc.scale, bc.edges, RMATA, RMATB, RMATC, 1)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(g.NumEdges()), "entries")
			}
			rss, cpuAfter := sysstat.PeakRSS(), sysstat.CPUTime()
			b.ReportMetric((cpuAfter-cpuBefore).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(rss)/(1<<30), "GiB-peak-RSS")
		})
	}
}

func BenchmarkFromEdges(b *testing.B) {
	src, dst := make([]int32, 10_000_000), make([]int32, 10_000_000)
	for i := range src {
		src[i] = int32(uint32(i*2654435761) % 1_000_000)
		dst[i] = int32(uint32(i*40503+i>>7) % 1_000_000)
	}
	for b.Loop() {
		if _, err := FromEdges(1_000_000, src, dst, BuildOptions{Symmetrize: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkErdosRenyi(b *testing.B) {
	// 1M nodes, about 15M undirected edges.
	for b.Loop() {
		if _, err := ErdosRenyi(1_000_000, 3e-5, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBarabasiAlbert(b *testing.B) {
	// 1M nodes, 8M undirected edges.
	for b.Loop() {
		if _, err := BarabasiAlbert(1_000_000, 8, 1); err != nil {
			b.Fatal(err)
		}
	}
}
