// Command dispatcher runs textslash's dispatcher service alone against the NATS server
// at NATS_URL; see dispatcher --help. textslash serve runs it together with the
// other services, from the same code.
package main

import (
	"os"

	"github.com/textslash/textslash/cmd/internal/app"
)

func main() {
	os.Exit(app.Main(app.Dispatcher, os.Args[1:], os.Stdout, os.Stderr))
}
