package controlplane

import "net"

// FreeAddress returns a loopback address with a port nothing listens on
// now, for a process under test to bind.
func FreeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String(), nil
}
