package kit

import "errors"

// ErrNotStored: Kit.Media was given a link that is not MediaRef's.
var ErrNotStored = errors.New("not a stored:<id> link of the media store")
