package launch

import (
	"bytes"
	"math"
	"strings"
)

// minSecretBits is the least estimated entropy a job secret must have. It
// refuses the obviously weak (runs, sequences, repeated words, which all
// estimate under 40) and keeps random secrets of 16 hex characters or more
// (64 bits; their estimate falls to 44 at worst, when chance repeats a
// stretch); 16 random decimal digits (53 bits) fall under it about once in
// 170 draws, 20 digits about once in 100,000.
const minSecretBits = 40

// secretBits estimates the entropy of a secret in bits. Each character is
// worth log2 of the alphabet the secret's character classes suggest (16 for
// hex digits; 26 for each case of letters, 10 for digits, 33 for the rest),
// except characters that are predictable from the ones before, which are
// worth nothing. Ignoring case, those are: a run (aaaa) or a sequence in the
// alphabet, the digits or along a keyboard row (abcd, 4321, qwer) from its
// fourth character on, also when every other character makes it (a1b2c3d4,
// 1q2w3e4r); every character of a four-character substring seen before (the
// second "password" of "passwordpassword"); and a common word's characters
// after its first (secret, changeme). A secret of at most four distinct
// characters is worth at most two bits a character.
func secretBits(s []byte) float64 {
	lower := bytes.ToLower(s)
	predictable := make([]bool, len(s))
	for i := 3; i < len(s); i++ {
		switch {
		case chain(lower, i, 1) || (i >= 6 && chain(lower, i, 2)):
			predictable[i] = true
		case bytes.Contains(lower[:i-1], lower[i-3:i+1]): // the whole repeat is predictable
			for j := i - 3; j <= i; j++ {
				predictable[j] = true
			}
		}
	}
	for _, w := range commonWords {
		for at, rest := 0, lower; ; {
			k := bytes.Index(rest, []byte(w))
			if k < 0 {
				break
			}
			for j := at + k + 1; j < at+k+len(w); j++ {
				predictable[j] = true
			}
			at, rest = at+k+1, rest[k+1:]
		}
	}
	unpredictable := 0
	for _, p := range predictable {
		if !p {
			unpredictable++
		}
	}
	bits := float64(unpredictable) * math.Log2(float64(alphabet(s)))
	var distinct [256]bool
	d := 0
	for _, c := range s {
		if !distinct[c] {
			distinct[c], d = true, d+1
		}
	}
	if d <= 4 {
		bits = min(bits, 2*float64(len(s)))
	}
	return bits
}

// orders are the sequences people type for a random-looking string: the
// alphabet, the digits, and the rows of a QWERTY keyboard.
var orders = []string{"abcdefghijklmnopqrstuvwxyz", "0123456789", "1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm", "!@#$%^&*()"}

// commonWords are words weak secrets are made of (four letters or more, so
// that random strings rarely contain one).
var commonWords = []string{"password", "passwd", "secret", "changeme", "letmein", "welcome", "admin", "token",
	"qwerty", "graft", "default", "master", "login", "monkey", "dragon", "shadow", "sunshine", "iloveyou",
	"trustno", "football", "baseball", "hello", "test"}

// chain reports whether s[i] ends a run or sequence of four characters
// spaced lag apart: the same step (0, or one place either way in one of the
// orders) three times.
func chain(s []byte, i, lag int) bool {
	if i < 3*lag {
		return false
	}
	st := step(s[i-lag], s[i])
	return st != noStep && st == step(s[i-2*lag], s[i-lag]) && st == step(s[i-3*lag], s[i-2*lag])
}

const noStep = 2

// step is 0 for a == b, ±1 when b follows or precedes a in one of the
// orders, and noStep otherwise.
func step(a, b byte) int {
	if a == b {
		return 0
	}
	for _, o := range orders {
		ia, ib := strings.IndexByte(o, a), strings.IndexByte(o, b)
		if ia >= 0 && ib >= 0 && abs(ib-ia) == 1 {
			return ib - ia
		}
	}
	return noStep
}

// alphabet is the size of the alphabet s seems drawn from.
func alphabet(s []byte) int {
	var lower, upper, digit, other, hexLower, hexUpper bool
	hexLower, hexUpper = true, true
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
			hexUpper = false
			hexLower = hexLower && c <= 'f'
		case c >= 'A' && c <= 'Z':
			upper = true
			hexLower = false
			hexUpper = hexUpper && c <= 'F'
		case c >= '0' && c <= '9':
			digit = true
		default:
			other, hexLower, hexUpper = true, false, false
		}
	}
	if (hexLower || hexUpper) && (lower || upper) {
		return 16
	}
	n := 0
	for _, class := range []struct {
		present bool
		size    int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}} {
		if class.present {
			n += class.size
		}
	}
	return max(n, 2)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
