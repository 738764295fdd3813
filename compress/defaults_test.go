package compress

import "testing"

func TestFloorStep(t *testing.T) {
	tests := []struct {
		spec      string
		steps     int
		floor     float64
		wantStep  int
		wantFound bool
	}{
		{"fixed:4", 100, 4, 0, true},
		{"fixed:1", 100, 1, 0, true},
		{"varco-paper", 100, 1.5, 20, true}, // (100−2)/5 = 19.6
		{"linear:128:1:5", 300, 1, 60, true},
		{"exp:128:1:5", 100, 1, 20, true},
		{"step:128:1:3", 100, 1, 21, true},
		{"linear:128:1:0.5", 100, 1, 0, false}, // reaches r = 1 only after 196 steps
		{"adaptive", 100, 1, 0, false},
	}
	for _, tt := range tests {
		s, err := ParseSchedule(tt.spec, tt.steps)
		if err != nil {
			t.Fatal(err)
		}
		if f := Floor(s); f != tt.floor {
			t.Errorf("Floor(%s) = %v, want %v", tt.spec, f, tt.floor)
		}
		step, ok := FloorStep(s, tt.steps)
		if step != tt.wantStep || ok != tt.wantFound {
			t.Errorf("FloorStep(%s, %d) = %d, %v; want %d, %v", tt.spec, tt.steps, step, ok, tt.wantStep, tt.wantFound)
		}
		if ok && step > 0 && AtFloor(s, s.Ratio(step-1)) {
			t.Errorf("%s: at its floor already at step %d", tt.spec, step-1)
		}
	}
}

func TestNamedSchedules(t *testing.T) {
	for name, spec := range ScheduleNames() {
		s, err := ParseSchedule(name, 100)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.String() != spec {
			t.Errorf("%s parses as %s, want %s", name, s, spec)
		}
	}
	if ScheduleNames()["varco-paper"] != "linear:128:1.5:5" {
		t.Errorf("varco-paper is %q, want the authors' linear:128:1.5:5", ScheduleNames()["varco-paper"])
	}
}
