package preview

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// usingDoc is the guide whose proxy recipes these tests run.
const usingDoc = "../../docs/using.md"

// The links' name in the recipes, and the one the tests give them: a
// name under .test resolves nowhere, so nothing but the proxy is asked.
const (
	docName  = "preview.example.com"
	testName = "preview.example.test"
)

// docs/using.md's nginx recipe, as written, in Debian's nginx on a
// loopback port: with the Host of a link, a request reaches the person's
// app (and its redirect comes back to the link), server-sent events come
// as sent, and a WebSocket upgrade passes both ways. Only the
// placeholders are replaced: the port nginx listens on, the preview
// listener's address, the name, and the certificate's directory (the
// test's own wildcard certificate for the name, in place of the one the
// DNS challenge would give).
func TestNginxRecipe(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		if nginx, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed (scripts/setup installs Debian's)")
		}
	}
	conf := recipe(t, "nginx")
	s, l, appPort := recipeTarget(t)
	dir := t.TempDir()
	roots := wildcardCert(t, "*."+testName, filepath.Join(dir, "fullchain.pem"), filepath.Join(dir, "privkey.pem"))
	addr := runProxy(t, "nginx", func(port int) *exec.Cmd {
		site := conf
		site = replace(t, site, "/etc/letsencrypt/live/"+docName+"/", dir+"/")
		site = replace(t, site, "listen 443 ", "listen 127.0.0.1:"+strconv.Itoa(port)+" ")
		site = replace(t, site, "127.0.0.1:3002", s.Addr())
		site = replace(t, site, docName, testName)
		write(t, filepath.Join(dir, "site.conf"), site)
		write(t, filepath.Join(dir, "nginx.conf"), fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log stderr notice;
events {}
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	include %[1]s/site.conf;
}
`, dir))
		return exec.Command(nginx, "-e", "stderr", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	}, func() (*x509.CertPool, error) { return roots, nil }, l.ID+"."+testName)
	checkThroughProxy(t, addr, roots, l, appPort)
}

// docs/using.md's Caddyfile, as written, in Debian's caddy on a loopback
// port, checked as TestNginxRecipe checks nginx's. Replaced: the port,
// the preview listener's address, the name, and the DNS challenge, for
// Caddy's own certificate authority (issuer internal): the challenge
// needs a DNS provider's module, which Debian's caddy has none of, and a
// real domain. Global options keep Caddy to the test's directory and
// loopback (no admin endpoint, no redirect listener, no trust store).
func TestCaddyRecipe(t *testing.T) {
	caddy, err := exec.LookPath("caddy")
	if err != nil {
		t.Skip("caddy is not installed (scripts/setup installs Debian's)")
	}
	site := recipe(t, "caddy")
	s, l, appPort := recipeTarget(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	roots := func() (*x509.CertPool, error) {
		b, err := os.ReadFile(filepath.Join(data, "pki", "authorities", "local", "root.crt"))
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, errors.New("caddy's root certificate: no PEM")
		}
		return pool, nil
	}
	addr := runProxy(t, "caddy", func(port int) *exec.Cmd {
		site := replace(t, site, "*."+docName+" ", "*."+testName+":"+strconv.Itoa(port)+" ")
		site = replace(t, site, "dns cloudflare {env.CLOUDFLARE_API_TOKEN}", "issuer internal")
		site = replace(t, site, "127.0.0.1:3002", s.Addr())
		write(t, filepath.Join(dir, "Caddyfile"), fmt.Sprintf(`{
	admin off
	storage file_system %s
	skip_install_trust
	auto_https disable_redirects
	default_bind 127.0.0.1
}

%s`, data, site))
		cmd := exec.Command(caddy, "run", "--adapter", "caddyfile", "--config", filepath.Join(dir, "Caddyfile"))
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
		return cmd
	}, roots, l.ID+"."+testName)
	pool, err := roots()
	if err != nil {
		t.Fatal(err)
	}
	checkThroughProxy(t, addr, pool, l, appPort)
}

// recipe is the code of docs/using.md's recipe name: the fenced block
// between <!-- recipe: name ... --> and the next <!-- end of the recipe -->.
func recipe(t *testing.T, name string) string {
	t.Helper()
	doc, err := os.ReadFile(usingDoc)
	if err != nil {
		t.Fatal(err)
	}
	start := "<!-- recipe: " + name + " "
	_, rest, ok := strings.Cut(string(doc), start)
	if !ok {
		t.Fatalf("%s: no %q...-->", usingDoc, start)
	}
	block, _, ok := strings.Cut(rest, "<!-- end of the recipe -->")
	if !ok {
		t.Fatalf("%s: the %s recipe has no <!-- end of the recipe -->", usingDoc, name)
	}
	_, code, ok := strings.Cut(block, "```"+name+"\n")
	if ok {
		code, _, ok = strings.Cut(code, "```")
	}
	if !ok {
		t.Fatalf("%s: the %s recipe has no ```%s block", usingDoc, name, name)
	}
	return code
}

// replace replaces old, a placeholder the recipe must have, with new.
func replace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("the recipe has no %q to replace:\n%s", old, s)
	}
	return strings.ReplaceAll(s, old, new)
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recipeTarget is a preview server whose links are https://*.<testName>
// and a link to the test's app.
func recipeTarget(t *testing.T) (*Server, Link, int) {
	t.Helper()
	port, dial := app(t)
	s, err := Listen(Config{URL: "https://*." + testName}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := s.Open(Target{Person: "web.a", Home: "h1", Port: port, Dial: dial})
	if err != nil {
		t.Fatal(err)
	}
	return s, l, port
}

// wildcardCert writes a certificate for name (a wildcard) and its key,
// and returns the pool of the authority that signed it.
func wildcardCert(t *testing.T, name, certPath, keyPath string) *x509.CertPool {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "recipe test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write(t, certPath, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	write(t, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool
}

// syncBuffer is a proxy's output, written while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// runProxy starts the proxy command makes for a free loopback port and
// waits, for 30 s, until it completes a TLS handshake for host there,
// verified with roots' authority; it returns the address. Another
// program taking the port meanwhile, it tries again on another.
func runProxy(t *testing.T, name string, command func(port int) *exec.Cmd, roots func() (*x509.CertPool, error), host string) string {
	t.Helper()
	for try := 1; ; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		cmd := command(port)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("%s's output:\n%s", name, out.String())
			}
		})
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		err = waitTLS(addr, host, roots, exited)
		if err == nil {
			return addr
		}
		if try < 3 && strings.Contains(strings.ToLower(out.String()), "address already in use") {
			t.Logf("%s: port %d taken meanwhile; again on another", name, port)
			continue
		}
		t.Fatalf("%s on %s: %v\n%s", name, addr, err, out.String())
	}
}

// waitTLS waits until a TLS handshake for host at addr succeeds.
func waitTLS(addr, host string, roots func() (*x509.CertPool, error), exited <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pool, err := roots()
		if err == nil {
			var c *tls.Conn
			c, err = tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{ServerName: host, RootCAs: pool})
			if err == nil {
				c.Close()
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("exited before it took connections")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no TLS handshake for %s in 30s: %v", host, err)
		}
	}
}

// checkThroughProxy checks that link l opens its app (on appPort) through
// the proxy at addr, as a phone's browser opening the link would.
func checkThroughProxy(t *testing.T, addr string, roots *x509.CertPool, l Link, appPort int) {
	t.Helper()
	host := l.ID + "." + testName
	_, port, _ := net.SplitHostPort(addr)
	tlsConfig := &tls.Config{ServerName: host, RootCAs: roots}
	// Upgrades and streams below over HTTP/1.1, as browsers open WebSockets.
	http1 := &tls.Config{ServerName: host, RootCAs: roots, NextProtos: []string{"http/1.1"}}
	client := &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			},
			TLSClientConfig:   tlsConfig,
			ForceAttemptHTTP2: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	defer client.CloseIdleConnections()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Get("https://" + host + ":" + port + path)
		if err != nil {
			t.Fatalf("GET %s through the proxy: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	resp, body := get("/seen")
	if want := fmt.Sprintf("host=localhost:%d ", appPort); resp.StatusCode != 200 || !strings.HasPrefix(body, want) {
		t.Errorf("the link through the proxy: %d %q; want the app's answer, starting %q", resp.StatusCode, body, want)
	}
	if resp, _ := get("/go"); resp.Header.Get("Location") != l.URL+"seen" {
		t.Errorf("the app's redirect through the proxy: %d to %q; want to %q", resp.StatusCode, resp.Header.Get("Location"), l.URL+"seen")
	}

	open := func(req string) (*tls.Conn, *bufio.Reader, *http.Response) {
		t.Helper()
		c, err := tls.Dial("tcp", addr, http1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(30 * time.Second)) // a guard: the test fails, not hangs
		fmt.Fprintf(c, req, host+":"+port)
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("%q through the proxy: %v", req, err)
		}
		return c, r, resp
	}
	_, _, resp = open("GET /events HTTP/1.1\r\nHost: %s\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Errorf("server-sent events through the proxy: %s", resp.Status)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); line != "data: first\n" {
		t.Errorf("the first event while the stream is open: %q %v; want it as sent, not held by the proxy", line, err)
	}

	ws, wr, resp := open("GET /ws HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("a WebSocket upgrade through the proxy: %s; want 101 Switching Protocols", resp.Status)
	}
	fmt.Fprint(ws, "reload\n")
	if got, err := wr.ReadString('\n'); got != "echo reload\n" {
		t.Errorf("through the upgraded connection: %q %v; want the app's echo", got, err)
	}
}
