// Command ingress runs textslash's ingress service alone against the NATS server
// at NATS_URL; see ingress --help. textslash serve runs it together with the
// other services, from the same code.
package main

import (
	"os"

	"github.com/textslash/textslash/cmd/internal/app"
)

func main() {
	os.Exit(app.Main(app.Ingress, os.Args[1:], os.Stdout, os.Stderr))
}
