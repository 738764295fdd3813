package launch

import (
	"fmt"
	"strconv"
)

// OptionalCount is an int flag whose variable holds -1 until the flag is
// given, so that an unset flag leaves the value to someone else (the
// environment, for --rank and --world). A given value below Min is refused
// rather than taken as "not given"; -h shows no default.
type OptionalCount struct {
	P   *int
	Min int
}

func (c OptionalCount) String() string {
	if c.P == nil || *c.P < 0 {
		return ""
	}
	return strconv.Itoa(*c.P)
}

func (c OptionalCount) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a whole number")
	}
	if v < c.Min {
		return fmt.Errorf("want %d or more", c.Min)
	}
	*c.P = v
	return nil
}
