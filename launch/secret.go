package launch

import (
	"bytes"
	"math"
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
// worth nothing: a run (aaaa) or a sequence (abcd, 4321) from its fourth
// character on, and every character of a four-character substring seen
// before (the second "password" of "passwordpassword"). A secret of at most four distinct
// characters is worth at most two bits a character.
func secretBits(s []byte) float64 {
	predictable := make([]bool, len(s))
	for i := 3; i < len(s); i++ {
		step := int(s[i]) - int(s[i-1])
		switch {
		case abs(step) <= 1 && step == int(s[i-1])-int(s[i-2]) && step == int(s[i-2])-int(s[i-3]):
			predictable[i] = true
		case bytes.Contains(s[:i-1], s[i-3:i+1]): // the whole repeat is predictable
			for j := i - 3; j <= i; j++ {
				predictable[j] = true
			}
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
