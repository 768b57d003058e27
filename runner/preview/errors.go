package preview

import "errors"

// ErrBadPort: a port that is not 1-65535.
var ErrBadPort = errors.New("not a port (1-65535)")

// ErrBadURL: a preview URL without one "*" in its host.
var ErrBadURL = errors.New("preview URL: want scheme://*.host[:port], with * where the link's id goes")
