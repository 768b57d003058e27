package app

import (
	"net/http/httptest"
	"testing"
)

func TestServedHosts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   config
		host  string
		serve bool
	}{
		{"localhost", config{Host: "127.0.0.1"}, "localhost:3000", true},
		{"localhost, no port", config{Host: "127.0.0.1"}, "localhost", true},
		{"a .localhost name", config{Host: "127.0.0.1"}, "app.localhost:3000", true},
		{"loopback v4", config{Host: "127.0.0.1"}, "127.0.0.1:3000", true},
		{"loopback v6", config{Host: "127.0.0.1"}, "[::1]:3000", true},
		{"upper case", config{Host: "127.0.0.1"}, "LOCALHOST:3000", true},
		{"trailing dot", config{Host: "127.0.0.1"}, "localhost.:3000", true},
		{"rebinding name", config{Host: "127.0.0.1"}, "rebind.attacker.example:3000", false},
		{"localhost as a prefix", config{Host: "127.0.0.1"}, "localhost.attacker.example", false},
		{"no host", config{Host: "127.0.0.1"}, "", false},
		{"a LAN address on loopback", config{Host: "127.0.0.1"}, "192.168.1.5:3000", false},
		{"a single word on loopback", config{Host: "127.0.0.1"}, "runner:3000", false},
		{"PUBLIC_URL's host", config{Host: "127.0.0.1", PublicURL: "https://tunnel.example.net"}, "tunnel.example.net", true},
		{"an allowed host", config{Host: "127.0.0.1", AllowedHosts: " Chat.Example.com ,x.example"}, "chat.example.com:443", true},
		{"not an allowed host", config{Host: "127.0.0.1", AllowedHosts: "chat.example.com"}, "evil.example.com", false},
		{"a LAN address, bound beyond loopback", config{Host: "0.0.0.0"}, "192.168.1.5:3000", true},
		{"a compose service", config{Host: "0.0.0.0"}, "runner:3000", true},
		{"the bound name", config{Host: "box.lan"}, "box.lan:3000", true},
		{"a name, bound beyond loopback", config{Host: "0.0.0.0"}, "rebind.attacker.example:3000", false},
	} {
		if got := servedHosts(tc.cfg).serves(tc.host); got != tc.serve {
			t.Errorf("%s: serves(%q) = %v; want %v", tc.name, tc.host, got, tc.serve)
		}
	}
}

func TestExposedAndPublic(t *testing.T) {
	for _, tc := range []struct {
		cfg     config
		exposed bool
	}{
		{config{Host: "127.0.0.1"}, false},
		{config{Host: "localhost"}, false},
		{config{Host: "0.0.0.0"}, true},
		{config{Host: "127.0.0.1", PublicURL: "https://t.example"}, true},
		{config{Host: "127.0.0.1", TelegramToken: "1:x"}, true},
		{config{Host: "127.0.0.1", TwilioSID: "AC1"}, true},
		{config{Host: "127.0.0.1", AllowedHosts: "chat.example"}, true},
	} {
		if got := tc.cfg.exposed(); got != tc.exposed {
			t.Errorf("%+v: exposed %v; want %v", tc.cfg, got, tc.exposed)
		}
	}
	cfg := config{Host: "127.0.0.1", PublicURL: "https://t.example", AllowedHosts: "chat.example"}
	for _, tc := range []struct {
		host, forwarded string
		public          bool
	}{
		{"127.0.0.1:3000", "", false},
		{"localhost:3000", "", false},
		{"t.example", "", true},
		{"chat.example:443", "", true},
		{"127.0.0.1:3000", "203.0.113.9", true},
		{"t.example:443", "", true},
		// PUBLIC_URL's name however it is spelt: any port, a trailing
		// dot, upper case.
		{"t.example:3000", "", true},
		{"t.example:80", "", true},
		{"t.example.", "", true},
		{"T.Example.:443", "", true},
		{"chat.example.", "", true},
		{"[::1]:3000", "", false},
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.RemoteAddr = "127.0.0.1:50000"
		r.Host = tc.host
		if tc.forwarded != "" {
			r.Header.Set("X-Forwarded-For", tc.forwarded)
		}
		if got := cfg.public(r); got != tc.public {
			t.Errorf("Host %s, X-Forwarded-For %q: public %v; want %v", tc.host, tc.forwarded, got, tc.public)
		}
	}
	local := config{Host: "127.0.0.1", PublicURL: "http://127.0.0.1:3000"}
	r := httptest.NewRequest("GET", "/readyz", nil)
	r.Host = "127.0.0.1:3000"
	if local.public(r) {
		t.Errorf("a PUBLIC_URL on loopback made its own listener public")
	}
}
