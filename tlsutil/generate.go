package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Default lifetimes of what Generate* makes, as `nomad tls` has them.
const (
	DefaultCADays   = 1825
	DefaultCertDays = 365
)

// DefaultRegion is the region of an agent whose configuration names none,
// as Nomad's "global".
const DefaultRegion = "global"

// ServerName is the DNS name every server certificate of region carries,
// and the name a server checks its peers' certificates for.
func ServerName(region string) string { return "server." + region + ".caravan" }

// ClientName is the DNS name of the client certificates of region.
func ClientName(region string) string { return "client." + region + ".caravan" }

// CAOptions are the options of GenerateCA; zero values take defaults.
type CAOptions struct {
	// CommonName defaults to "Caravan Agent CA <serial>".
	CommonName string
	// Days is how long the CA is valid; default DefaultCADays.
	Days int
}

// GenerateCA makes a self-signed certificate authority with an ECDSA P-256
// key, and returns its certificate and private key, PEM-encoded.
func GenerateCA(opts CAOptions) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	id, err := keyID(key.Public())
	if err != nil {
		return nil, nil, err
	}
	name := opts.CommonName
	if name == "" {
		name = "Caravan Agent CA " + serial.String()
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Caravan"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, days(opts.Days, DefaultCADays)),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          id,
		AuthorityKeyId:        id,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// CertOptions are the options of GenerateCert.
type CertOptions struct {
	// CACert and CAKey are the PEM certificate and key of the CA that signs.
	CACert, CAKey []byte
	// Name is the certificate's common name, usually ServerName(region) or
	// ClientName(region); it is added to DNSNames.
	Name string
	// DNSNames and IPAddresses are further names the certificate is valid
	// for.
	DNSNames    []string
	IPAddresses []net.IP
	// Days is how long the certificate is valid; default DefaultCertDays.
	Days int
	// Server makes a certificate for both server and client authentication
	// (servers dial each other); otherwise for client authentication only.
	Server bool
}

// GenerateCert makes a certificate with an ECDSA P-256 key signed by the CA
// in opts, and returns it and its private key, PEM-encoded.
func GenerateCert(opts CertOptions) (certPEM, keyPEM []byte, err error) {
	if opts.Name == "" {
		return nil, nil, errors.New("a certificate needs a name")
	}
	ca, caKey, err := ParseCA(opts.CACert, opts.CAKey)
	if err != nil {
		return nil, nil, err
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	id, err := keyID(key.Public())
	if err != nil {
		return nil, nil, err
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if opts.Server {
		usage = append(usage, x509.ExtKeyUsageServerAuth)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: opts.Name},
		DNSNames:              append([]string{opts.Name}, opts.DNSNames...),
		IPAddresses:           opts.IPAddresses,
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, days(opts.Days, DefaultCertDays)),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           usage,
		SubjectKeyId:          id,
		AuthorityKeyId:        ca.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// ParseCA parses a PEM CA certificate and its PEM private key.
func ParseCA(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	pair, err := tlsKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("read the CA: %w", err)
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("parse the CA certificate: %w", err)
	}
	if !ca.IsCA {
		return nil, nil, errors.New("the CA certificate is not a certificate authority")
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the CA key cannot sign")
	}
	return ca, signer, nil
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// newSerial returns a random 128-bit serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return n, nil
}

// keyID is a key's subject key identifier: a hash of its public key.
func keyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return sum[:20], nil
}

func days(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}
