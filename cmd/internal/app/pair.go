package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/textslash/textslash/contract/access"
)

const pairUsage = `Makes a pairing code for one new person: valid for an hour, used up by the
first number or Telegram chat that sends it as a message; at most three
wait at once. Against textslash serve's embedded NATS it logs in with
<data>/nats/admin.env; elsewhere set NATS_URL, NATS_USER and NATS_PASSWORD.
People paired in are listed by the people keyword and removed by revoke
(for an admin, TEXTSLASH_ADMINS).

Each flag is also read from the environment variable in brackets.`

// Pair makes a pairing code and prints it.
func Pair(args []string, stdout, stderr io.Writer) int {
	var c struct {
		common `embed:""`
		Data   string `name:"data" var:"TEXTSLASH_DATA" default:"./data" help:"${data_help}"`
	}
	_, err := parse("textslash pair", pairUsage, &c, adminVars("the NATS server; default the one in <data>/nats/admin.env"), args, os.LookupEnv, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err == nil && c.NATSURL == "" {
		err = loginFrom(filepath.Join(c.Data, "nats", "admin.env"), &c.common)
	}
	if err != nil {
		fmt.Fprintf(stderr, "textslash pair: %v\n", err)
		return 2
	}
	js, log, closeNATS, err := connectAdmin(c.common, "pair", stderr)
	if err != nil {
		log.Error().Err(err).Msg("pair failed")
		return 1
	}
	defer closeNATS()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := access.OpenPairing(ctx, js)
	var code string
	if err == nil {
		code, err = p.NewCode(ctx, "textslash pair")
	}
	if err != nil {
		fmt.Fprintf(stderr, "textslash pair: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\nValid for an hour, for one new person: they send it as their first message to textslash.\n", code)
	return 0
}

// loginFrom reads NATS_URL, NATS_USER and NATS_PASSWORD from an env file
// that textslash serve wrote.
func loginFrom(path string, c *common) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("NATS_URL is not set, and %w (run textslash serve first, or set NATS_URL)", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "NATS_URL":
			c.NATSURL = v
		case "NATS_USER":
			c.NATSUser = v
		case "NATS_PASSWORD":
			c.NATSPass = v
		}
	}
	if c.NATSURL == "" {
		return fmt.Errorf("%s: no NATS_URL", path)
	}
	return sc.Err()
}
