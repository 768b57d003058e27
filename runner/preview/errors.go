package preview

import "errors"

// ErrBadPort: a port that is not 1-65535.
var ErrBadPort = errors.New("not a port (1-65535)")

// ErrBadURL: a links' URL that is not http(s)://*.<a name of its own>.
var ErrBadURL = errors.New("want http(s)://*.<a name of its own>[:port], * where a link's id goes")

// errEnded is why a request's context ends when its link does.
var errEnded = errors.New("the preview link ended")
