// Taking a shot in a tab: the viewport, the full page's clip and the
// ladder of renderings tried until one is under the byte ceiling.

package pageshot

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig of the shots
	"math"
	"slices"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// DefaultMaxBytes is the JPEG ceiling when Options.MaxBytes or the
// maxBytes of Compress is zero: 600 KB.
const DefaultMaxBytes = 600_000

// Viewports in CSS pixels; both are drawn at device scale 2 first.
const (
	mobileWidth, mobileHeight   = 390, 844
	desktopWidth, desktopHeight = 1440, 900
)

// ladder is the order in which Capture tries renderings until one is under
// the ceiling: quality first, then half the pixels in each direction.
// lower is the smallest size seen relative to the first step (text pages,
// coloured blocks, noise; viewport and full page; mobile and desktop): a
// step that even so would be over the ceiling is not taken, but the last
// step always is.
var ladder = []struct {
	scale   float64
	quality int
	lower   float64
}{{2, 75, 1}, {2, 50, 0.6}, {1, 75, 0.15}, {1, 50, 0.09}, {1, 35, 0.06}}

// maxFullHeight cuts full-page shots, in CSS pixels of the viewport: at
// scale 2 that is 32,768 pixels, half the longest side a JPEG can have.
const maxFullHeight = 16384

// Options describe one shot.
type Options struct {
	URL string
	// Desktop: 1440×900; default mobile 390×844 (mobile and touch
	// emulation); device scale factor 2 for both.
	Desktop bool
	// FullPage: the whole page, not just the viewport; a page wider than
	// the viewport is shrunk to fit it, one longer than 16,384 CSS pixels is
	// cut (Shot.Truncated).
	FullPage bool
	// FitContent, with FullPage: the image is as tall as the page's
	// content (its root element), where a full page is at least as tall
	// as the viewport, a short page padded below with its background.
	FitContent bool
	// MaxBytes is the ceiling for the JPEG; default DefaultMaxBytes.
	MaxBytes int
	// Profile names whose shot this is (a person): shots of different
	// profiles never share cookies, storage or cache, each tab living in
	// a browser context of its own; the warm tab is kept only for the same
	// profile's next shot.
	Profile string
	// Proxy, when set, is an HTTP proxy ("http://127.0.0.1:8123") every
	// request of the shot goes through, loopback addresses included: the way
	// to a page in another network namespace. Such a shot has a browser
	// context of its own, with that proxy; its tab is kept only for the
	// next shot of the same profile through the same proxy.
	Proxy string
}

// Shot is one JPEG under the ceiling.
type Shot struct {
	JPEG []byte
	// Width, Height are the pixels of the image.
	Width, Height int
	// Quality is the JPEG quality it was encoded with.
	Quality int
	// Scale is the device scale used in the end (Capture), or the factor by
	// which the input was shrunk (Compress: 1, 0.5, 0.25, …).
	Scale float64
	// Truncated: a full page longer than 16,384 CSS pixels (at the
	// viewport's width), of which the image holds the top.
	Truncated bool
}

// shootTab takes the shot in the tab.
func shootTab(tab context.Context, o Options) (Shot, error) {
	width, height := int64(mobileWidth), int64(mobileHeight)
	if o.Desktop {
		width, height = desktopWidth, desktopHeight
	}
	viewport := func(scale float64) chromedp.Action[chromedp.Void] {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(scale)}
		if o.Desktop {
			opts = append(opts, chromedp.EmulateLandscape)
		} else {
			opts = append(opts, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		return chromedp.EmulateViewport(width, height, opts...)
	}
	scale := ladder[0].scale
	if err := chromedp.Do(tab, viewport(scale), chromedp.Navigate(o.URL)); err != nil {
		return Shot{}, err
	}
	var clip *page.Viewport
	truncated := false
	if o.FullPage {
		var err error
		if clip, truncated, err = fullPageClip(tab, o.FitContent, float64(width), float64(height)); err != nil {
			return Shot{}, err
		}
	}
	var first int
	var sizes []int
	for i, step := range ladder {
		if i > 0 && i < len(ladder)-1 && float64(first)*step.lower > float64(o.MaxBytes) {
			continue // sure to be over
		}
		if step.scale != scale {
			scale = step.scale
			if err := chromedp.Do(tab, viewport(scale)); err != nil {
				return Shot{}, err
			}
		}
		img, err := chromedp.Run(tab, capture(clip, step.quality))
		if err != nil {
			return Shot{}, fmt.Errorf("capture: %w", err)
		}
		if i == 0 {
			first = len(img)
		}
		if len(img) > o.MaxBytes {
			sizes = append(sizes, len(img))
			continue
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(img))
		if err != nil {
			return Shot{}, fmt.Errorf("capture: %w", err)
		}
		return Shot{JPEG: img, Width: cfg.Width, Height: cfg.Height, Quality: step.quality, Scale: scale, Truncated: truncated}, nil
	}
	return Shot{}, fmt.Errorf("%w: %d bytes at best, ceiling %d (tried %v)",
		ErrTooLarge, slices.Min(sizes), o.MaxBytes, sizes)
}

// contentHeight is the height of a page's content in CSS pixels: its root
// element's, which (unlike the page's layout size) does not grow to the
// viewport's.
const contentHeight = "document.documentElement.getBoundingClientRect().height"

// fullPageClip measures the page in the tab and returns the clip of its
// full-page shot in a viewport of width×height (fullPage); with fit, the
// page is as tall as its content, however short.
func fullPageClip(tab context.Context, fit bool, width, height float64) (clip *page.Viewport, truncated bool, err error) {
	m, err := chromedp.Call(tab, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return nil, false, fmt.Errorf("page size: %w", err)
	}
	size := m.CSSContentSize
	if fit && size != nil {
		h, err := chromedp.Run(tab, chromedp.Evaluate[float64](contentHeight))
		if err != nil {
			return nil, false, fmt.Errorf("content height: %w", err)
		}
		fitted := *size
		fitted.Height, size = max(math.Ceil(h), 1), &fitted
		height = 1
	}
	clip, truncated = fullPage(size, width, height)
	return clip, truncated, nil
}

// fullPage is the clip of a full-page shot of a page of the given size (CSS
// pixels) in a viewport of width×height (height: the least the shot
// takes): a page wider than the viewport is shrunk to its width, as a
// phone shows a page made for desktops, and the image is cut at
// maxFullHeight; truncated says so.
func fullPage(size *dom.Rect, width, height float64) (clip *page.Viewport, truncated bool) {
	w, h := width, height
	if size != nil {
		w, h = max(w, math.Ceil(size.Width)), max(h, math.Ceil(size.Height))
	}
	scale := width / w
	if h*scale > maxFullHeight {
		h, truncated = math.Floor(maxFullHeight/scale), true
	}
	return &page.Viewport{Width: w, Height: h, Scale: scale}, truncated
}

// capture is a JPEG of the viewport or, with a clip, of that part of the
// page (beyond the viewport).
func capture(clip *page.Viewport, quality int) chromedp.Action[[]byte] {
	return func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		q, yes := int64(quality), true
		p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatJpeg, Quality: &q, FromSurface: &yes}
		if clip != nil {
			p.Clip, p.CaptureBeyondViewport = clip, &yes
		}
		r, err := cdp.Call(ctx, t, page.CaptureScreenshot, p)
		return r.Data, err
	}
}
