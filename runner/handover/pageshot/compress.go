package pageshot

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	_ "image/png" // Compress takes PNGs
	"slices"
)

// The smallest ratios of JPEG sizes seen (see ladder in shot.go): quality
// 50 to 75, and half the width and height to full size at the same quality.
// Compress skips the encodings these say are sure to be over the ceiling.
const lowerQ50, lowerHalf = 0.6, 0.15

// MaxPixels is the largest image Compress decodes: 20 MP, five times what
// a phone shows (about 4 MP), a long page's full screenshot included. A
// 16-bit PNG takes 8 bytes a pixel decoded: 160 MB at this size, 800 MB at
// 100 MP, so the size is read from the header first.
const MaxPixels = 20_000_000

// Compress turns a PNG or JPEG (e.g. a screenshot file an agent saved) into
// a JPEG under maxBytes (default DefaultMaxBytes) the way Capture does:
// quality 75, then 50, then half the width and height (a 2×2 box filter)
// and again, until it fits; encodings sure to be over are skipped. Transparent parts turn white. The JPEG is always
// encoded anew, which also drops any metadata of the input.
func Compress(img []byte, maxBytes int) (Shot, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(img))
	if err != nil {
		return Shot{}, fmt.Errorf("compress: %w", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return Shot{}, fmt.Errorf("compress: empty %d×%d image", cfg.Width, cfg.Height)
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return Shot{}, fmt.Errorf("compress: %d×%d pixels: %w", cfg.Width, cfg.Height, ErrTooManyPixels)
	}
	src, _, err := image.Decode(bytes.NewReader(img))
	if err != nil {
		return Shot{}, fmt.Errorf("compress: %w", err)
	}
	m := flatten(src)
	var buf bytes.Buffer
	var sizes []int
	encode := func(q int) (bool, error) {
		buf.Reset()
		if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: q}); err != nil {
			return false, fmt.Errorf("compress: %w", err)
		}
		sizes = append(sizes, buf.Len())
		return buf.Len() <= maxBytes, nil
	}
	for scale := 1.0; ; {
		for _, q := range []int{75, 50} {
			if q == 50 && float64(sizes[len(sizes)-1])*lowerQ50 > float64(maxBytes) {
				break // sure to be over
			}
			if ok, err := encode(q); err != nil || ok {
				b := m.Bounds()
				return Shot{JPEG: bytes.Clone(buf.Bytes()), Width: b.Dx(), Height: b.Dy(), Quality: q, Scale: scale}, err
			}
		}
		// Halve, and again while it is sure to be over still.
		for predicted := float64(sizes[len(sizes)-1]); ; {
			if b := m.Bounds(); b.Dx() < 32 || b.Dy() < 32 {
				return Shot{}, fmt.Errorf("%w: %d bytes at best, ceiling %d (tried %v)",
					ErrTooLarge, slices.Min(sizes), maxBytes, sizes)
			}
			m, scale, predicted = halve(m), scale/2, predicted*lowerHalf
			if predicted <= float64(maxBytes) {
				break
			}
		}
	}
}

// flatten draws src on white into an RGBA image at the origin.
func flatten(src image.Image) *image.RGBA {
	b := src.Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Bounds(), image.White, image.Point{}, draw.Src)
	draw.Draw(dst, dst.Bounds(), src, b.Min, draw.Over)
	return dst
}

// halve shrinks m to half its width and height, each pixel the mean of a
// 2×2 block (an odd last row or column is dropped).
func halve(m *image.RGBA) *image.RGBA {
	w, h := m.Bounds().Dx()/2, m.Bounds().Dy()/2
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		r0 := m.Pix[2*y*m.Stride:]
		r1 := m.Pix[(2*y+1)*m.Stride:]
		out := dst.Pix[y*dst.Stride:]
		for x := range w {
			i := 8 * x
			for c := range 4 {
				sum := uint(r0[i+c]) + uint(r0[i+4+c]) + uint(r1[i+c]) + uint(r1[i+4+c])
				out[4*x+c] = uint8((sum + 2) / 4)
			}
		}
	}
	return dst
}
