package comm

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"
)

// testCA makes a CA and returns a function issuing certificates it signs.
func testCA(t *testing.T) (*x509.CertPool, func() tls.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "graft test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	serial := int64(1)
	issue := func() tls.Certificate {
		serial++
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		leaf := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "worker"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		d, err := x509.CreateCertificate(rand.Reader, leaf, ca, &k.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{d}, PrivateKey: k}
	}
	return pool, issue
}

func TestTCPOverTLS(t *testing.T) {
	pool, issue := testCA(t)
	_, otherIssue := testCA(t)
	cases := []struct {
		name  string
		tls   func(rank int) *tls.Config
		works bool
	}{
		{"same CA", func(int) *tls.Config { return TLSConfigFrom(issue(), pool) }, true},
		{"rank 1 without TLS", func(r int) *tls.Config {
			if r == 1 {
				return nil
			}
			return TLSConfigFrom(issue(), pool)
		}, false},
		{"rank 1 signed by another CA", func(r int) *tls.Config {
			if r == 1 {
				return TLSConfigFrom(otherIssue(), pool)
			}
			return TLSConfigFrom(issue(), pool)
		}, false},
	}
	for _, tc := range cases {
		links := []string{TransportTCP, TransportAuto} // auto: shared memory beside the TLS connections
		if !tc.works {
			links = links[1:] // refused in the handshake, before any link is chosen
		}
		for _, link := range links {
			t.Run(tc.name+"/"+link, func(t *testing.T) {
				comms, errs := connectAll(t, 3, func(rank int, o *Options) {
					o.TLS = tc.tls(rank)
					o.StartTimeout = time.Second
					o.Transport = link
				})
				if !tc.works {
					if errs[0] == nil || !strings.Contains(errs[0].Error(), "rank 1 never arrived") {
						t.Fatalf("rank 0: %v; want rank 1 refused", errs[0])
					}
					return
				}
				if err := firstErr(errs); err != nil {
					t.Fatal(err)
				}
				err := firstErr(onEach(comms, func(c *TCP) error {
					data := []float32{float32(c.Rank())}
					if err := c.AllReduce("g", data); err != nil {
						return err
					}
					if data[0] != 3 {
						t.Errorf("sum %v, want 3", data[0])
					}
					return nil
				}))
				if err != nil {
					t.Fatal(err)
				}
				if want := map[string]string{TransportTCP: linkTCP, TransportAuto: linkShm}[link]; comms[0].Transport(1) != want {
					t.Errorf("rank 0 reaches rank 1 over %q, want %q", comms[0].Transport(1), want)
				}
			})
		}
	}
}
