package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
)

// KVStream is the stream behind a key-value bucket, as NATS names it (for
// permissions and stream lists); ObjectStream the one behind an object
// store.
func KVStream(bucket string) string     { return "KV_" + bucket }
func ObjectStream(bucket string) string { return "OBJ_" + bucket }

// HasKey reports whether bucket holds key (put, not deleted or purged),
// by one direct get of the key's subject: a key-value handle would look
// the bucket's stream up first, which a login allowed this one read
// alone may not (ingress reads egress's held marks so, nats.conf).
func HasKey(ctx context.Context, nc *nats.Conn, bucket, key string) (bool, error) {
	m, err := nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+KVStream(bucket)+".$KV."+bucket+"."+key, nil)
	if err != nil {
		return false, fmt.Errorf("direct get %s: %w", key, err)
	}
	switch m.Header.Get("Status") {
	case "":
	case "404":
		return false, nil
	default:
		return false, fmt.Errorf("direct get %s: %s %s", key, m.Header.Get("Status"), m.Header.Get("Description"))
	}
	op := m.Header.Get("KV-Operation") // a deleted key's marker
	return op != "DEL" && op != "PURGE", nil
}
