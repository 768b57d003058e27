package ingress

import (
	"net"
	"strings"
)

// HostName is the name in a Host header or a URL's host, spelt the one way
// every comparison of host names uses: without the port and an IPv6
// address's brackets, in lower case, without a fully qualified name's
// trailing dot. "Example.COM.:443" and "example.com" are one host.
func HostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}
