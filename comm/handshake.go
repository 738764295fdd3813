package comm

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
)

// The handshake runs on every connection before any frame. Both sides know
// the job secret K; each proves it over fresh nonces from both sides, with a
// role label so that one side's proof can never be replayed as the other's:
//
//	dialer   → acceptor: magic ‖ Nd                          (40 bytes)
//	acceptor → dialer:   magic ‖ Na ‖ HMAC(K, "acceptor" ‖ Nd ‖ Na)  (72 bytes)
//	dialer   → acceptor: HMAC(K, "dialer" ‖ Nd ‖ Na)          (32 bytes)
//	acceptor → dialer:   one status byte (1 = accepted)
//
// Every message has a fixed size, so a peer without the secret can make us
// read at most 40 bytes into a stack buffer. The HMAC proves knowledge of
// the secret; it does not protect the stream afterwards against an active
// man in the middle, which is what the optional TLS layer is for.

const (
	nonceLen = 32
	macLen   = sha256.Size
)

var handshakeMagic = [8]byte{'G', 'R', 'A', 'F', 'T', 'v', '1', 0}

// ErrAuth is wrapped by every handshake failure caused by the peer's proof.
var ErrAuth = errors.New("authentication failed")

func handshakeMAC(secret []byte, role string, nd, na []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(role))
	m.Write(nd)
	m.Write(na)
	return m.Sum(nil)
}

// handshakeDial runs the dialer's side on rw.
func handshakeDial(rw io.ReadWriter, secret []byte) error {
	if len(secret) == 0 {
		return errors.New("no job secret")
	}
	var hello [8 + nonceLen]byte
	copy(hello[:], handshakeMagic[:])
	if _, err := rand.Read(hello[8:]); err != nil {
		return err
	}
	if _, err := rw.Write(hello[:]); err != nil {
		return err
	}
	var reply [8 + nonceLen + macLen]byte
	if _, err := io.ReadFull(rw, reply[:]); err != nil {
		return fmt.Errorf("reading the peer's handshake: %w", err)
	}
	if [8]byte(reply[:8]) != handshakeMagic {
		return fmt.Errorf("%w: the peer does not speak graft's protocol", ErrAuth)
	}
	nd, na := hello[8:], reply[8:8+nonceLen]
	if !hmac.Equal(reply[8+nonceLen:], handshakeMAC(secret, "acceptor", nd, na)) {
		return fmt.Errorf("%w: the peer does not know the job secret", ErrAuth)
	}
	if _, err := rw.Write(handshakeMAC(secret, "dialer", nd, na)); err != nil {
		return err
	}
	var status [1]byte
	if _, err := io.ReadFull(rw, status[:]); err != nil {
		return fmt.Errorf("the peer gave no verdict on our proof: %w", err)
	}
	if status[0] != 1 {
		return fmt.Errorf("%w: the peer refused our proof", ErrAuth)
	}
	return nil
}

// handshakeAccept runs the acceptor's side on rw.
func handshakeAccept(rw io.ReadWriter, secret []byte) error {
	if len(secret) == 0 {
		return errors.New("no job secret")
	}
	var hello [8 + nonceLen]byte
	if _, err := io.ReadFull(rw, hello[:]); err != nil {
		return fmt.Errorf("reading the peer's handshake: %w", err)
	}
	if [8]byte(hello[:8]) != handshakeMagic {
		return fmt.Errorf("%w: the peer does not speak graft's protocol", ErrAuth)
	}
	var reply [8 + nonceLen + macLen]byte
	copy(reply[:], handshakeMagic[:])
	if _, err := rand.Read(reply[8 : 8+nonceLen]); err != nil {
		return err
	}
	nd, na := hello[8:], reply[8:8+nonceLen]
	copy(reply[8+nonceLen:], handshakeMAC(secret, "acceptor", nd, na))
	if _, err := rw.Write(reply[:]); err != nil {
		return err
	}
	var proof [macLen]byte
	if _, err := io.ReadFull(rw, proof[:]); err != nil {
		return fmt.Errorf("reading the peer's proof: %w", err)
	}
	if !hmac.Equal(proof[:], handshakeMAC(secret, "dialer", nd, na)) {
		rw.Write([]byte{0})
		return fmt.Errorf("%w: the peer does not know the job secret", ErrAuth)
	}
	_, err := rw.Write([]byte{1})
	return err
}
