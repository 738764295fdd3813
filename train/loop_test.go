package train

import "testing"

func TestBetter(t *testing.T) {
	tests := []struct {
		byLoss  bool
		m, best Metrics
		want    bool
	}{
		{false, Metrics{ValAcc: 0.8, ValLoss: 1}, Metrics{Epoch: 1, ValAcc: 0.7, ValLoss: 0.5}, true},
		{false, Metrics{ValAcc: 0.7, ValLoss: 1}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 2}, false},
		{false, Metrics{ValAcc: 0.8, ValLoss: 0.9}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 1}, true},
		{false, Metrics{ValAcc: 0.8, ValLoss: 1}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 1}, false},
		{false, Metrics{ValAcc: 0}, Metrics{}, true}, // nothing selected yet
		{true, Metrics{ValAcc: 0.7, ValLoss: 0.5}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 1}, true},
		{true, Metrics{ValAcc: 0.9, ValLoss: 1.5}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 1}, false},
		{true, Metrics{ValLoss: 9}, Metrics{}, true},
	}
	for _, tt := range tests {
		l := &Loop{cfg: Config{SelectByLoss: tt.byLoss}}
		if got := l.better(tt.m, tt.best); got != tt.want {
			t.Errorf("better(%+v, %+v) by loss %v = %v, want %v", tt.m, tt.best, tt.byLoss, got, tt.want)
		}
	}
}
