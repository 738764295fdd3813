package async

import (
	"testing"

	"github.com/graft-gnn/graft/nn"
)

// The server's work per pushed gradient, for a shard of 737k values
// (GraphSAGE, 1433 features, hidden 256): applying Adam, and decoding the
// gradient and encoding the parameters sent back.
func BenchmarkShardApplyAdam(b *testing.B) {
	const n = 737_000
	sh, err := NewShard(Settings{Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01}, MaxStaleness: -1},
		[][]float32{make([]float32, n)}, []float64{0})
	if err != nil {
		b.Fatal(err)
	}
	grad := make([]float32, n)
	b.SetBytes(4 * n)
	for range b.N {
		if _, _, err := sh.Apply(grad, sh.Version()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWireRoundTrip(b *testing.B) {
	const n = 737_000
	values := make([]float32, n)
	var dst []float32
	b.SetBytes(2 * 4 * n)
	for range b.N {
		msg := request{kind: kindPush, grad: values}.encode()
		r, err := decodeRequest(msg, dst)
		if err != nil {
			b.Fatal(err)
		}
		dst = r.grad
		rep := reply{values: values}.encode()
		if _, err := decodeReply(rep, dst); err != nil {
			b.Fatal(err)
		}
	}
}
