package ingress

import "fmt"

// errTooLarge: an attachment over mediaMaxBytes (download,
// telegramDownload); the media fetch service answers that it is too large.
var errTooLarge = fmt.Errorf("larger than %d MB", mediaMaxBytes>>20)
