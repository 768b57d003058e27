package pageshot

import "errors"

var (
	// ErrNoChromium: Config.Bin is empty and no chromium, chromium-browser
	// or google-chrome is in PATH, or Config.Bin is not an executable.
	ErrNoChromium = errors.New("no Chromium")

	// ErrTooLarge: even the smallest rendering tried does not fit under the
	// byte ceiling. No image comes with it.
	ErrTooLarge = errors.New("image over the size ceiling")

	// ErrTooManyPixels: an image to compress is larger than MaxPixels; it
	// is refused before it is decoded.
	ErrTooManyPixels = errors.New("image has too many pixels")

	// ErrClosed: Capture after Close.
	ErrClosed = errors.New("browser closed")

	// ErrPageCrashed: the tab's renderer crashed while loading or drawing
	// the page (the browser itself lives on).
	ErrPageCrashed = errors.New("page crashed")
)
