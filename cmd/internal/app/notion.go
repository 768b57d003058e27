package app

import (
	"errors"
	"fmt"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/notion"
)

// on reports whether Notion is configured.
func (n *notionConfig) on() bool { return n.Token != "" || n.Database != "" || n.Person != "" }

// validateNotion checks what ingress and egress cannot: the person, as
// this process writes them, and where egress reads images when media runs
// elsewhere. Only ingress and egress talk to Notion (and only they get
// NOTION_TOKEN in compose.yaml).
func (c *config) validateNotion() error {
	n := &c.Notion
	if !n.on() || !(c.runs(Ingress) || c.runs(Egress)) {
		return nil
	}
	if c.runs(Egress) && !c.runs(Media) && c.PublicURL == "" {
		return errors.New("PUBLIC_URL: egress reads the images it uploads to Notion from it when media runs in another process")
	}
	if _, err := notionUser(n.Person); err != nil {
		return fmt.Errorf("TEXTSLASH_NOTION_PERSON: %w", err)
	}
	return nil
}

// notionUser is the user an address names: <channel>:<id>, a phone
// number's with its + (whatsapp:+15551234567).
func notionUser(addr string) (contract.User, error) {
	ch, id, ok := strings.Cut(addr, ":")
	if !ok {
		return contract.User{}, fmt.Errorf("%q: want whatsapp:+<number>, sms:+<number>, telegram:<chat id> or web:<id>", addr)
	}
	if ch == contract.ChannelWhatsApp || ch == contract.ChannelSMS {
		return contract.PhoneUser(ch, id)
	}
	return contract.NewUser(ch, id)
}

// client is Notion's API client; nil without a token, which ingress and
// egress refuse (NOTION_TOKEN).
func (n *notionConfig) client() *notion.Client {
	if n.Token == "" {
		return nil
	}
	c := &notion.Client{Token: n.Token}
	if n.API != "" {
		c.BaseURL = strings.TrimRight(n.API, "/")
	}
	return c
}
