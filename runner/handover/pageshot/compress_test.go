package pageshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"
)

// noise is a w×h image of random pixels: as hard to compress as it gets.
func noise(w, h int) *image.RGBA {
	r := rand.New(rand.NewPCG(1, 2))
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = uint8(r.UintN(256))
		if i%4 == 3 {
			m.Pix[i] = 255
		}
	}
	return m
}

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCompress(t *testing.T) {
	big := encodePNG(t, noise(1600, 3000))
	t.Logf("noisy PNG: 1600×3000, %d bytes", len(big))
	for _, tc := range []struct {
		name     string
		maxBytes int
	}{
		{"default ceiling", 0},
		{"600 KB", 600_000},
		{"1 MB", 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compress(big, tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d×%d q%d scale %g: %d bytes", s.Width, s.Height, s.Quality, s.Scale, len(s.JPEG))
			checkJPEG(t, s, orDefault(tc.maxBytes, DefaultMaxBytes))
			if want := int(1600 * s.Scale); s.Width != want {
				t.Errorf("got width %d at scale %g; want %d", s.Width, s.Scale, want)
			}
		})
	}
}

// A small image keeps its size at quality 75; a JPEG works too; transparent
// parts turn white, not black.
func TestCompressSmall(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 200, 100))
	for x := range 100 {
		for y := range 100 {
			m.Set(x, y, color.NRGBA{0, 0, 255, 255}) // left half blue, right half transparent
		}
	}
	var j bytes.Buffer
	if err := jpeg.Encode(&j, m, nil); err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{"png": encodePNG(t, m), "jpeg": j.Bytes()} {
		t.Run(name, func(t *testing.T) {
			s, err := Compress(in, 0)
			if err != nil {
				t.Fatal(err)
			}
			if s.Width != 200 || s.Height != 100 || s.Quality != 75 || s.Scale != 1 {
				t.Errorf("got %d×%d q%d scale %g; want 200×100 q75 scale 1", s.Width, s.Height, s.Quality, s.Scale)
			}
			out := checkJPEG(t, s, DefaultMaxBytes)
			if name == "png" && !isWhite(out.At(150, 50)) {
				t.Errorf("transparent part is %v; want white", out.At(150, 50))
			}
			if r, g, b, _ := out.At(50, 50).RGBA(); r > 0x2000 || g > 0x2000 || b < 0xe000 {
				t.Errorf("blue part is %v; want blue", out.At(50, 50))
			}
		})
	}
}

func TestCompressErrors(t *testing.T) {
	if _, err := Compress([]byte("not an image"), 0); err == nil {
		t.Error("got no error for text; want one")
	}
	if _, err := Compress(encodePNG(t, noise(200, 200)), 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("got %v for a 100-byte ceiling; want ErrTooLarge", err)
	}
	// A PNG header that claims 100,000×100,000 pixels is refused before
	// decoding.
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1)))
	huge := bytes.Clone(buf.Bytes())
	copy(huge[16:24], []byte{0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0}) // IHDR width, height
	binary.BigEndian.PutUint32(huge[29:33], crc32.ChecksumIEEE(huge[12:29]))
	if _, err := Compress(huge, 0); err == nil || !strings.Contains(err.Error(), "100000×100000") {
		t.Errorf("got %v for a 10-gigapixel header; want an error naming its size", err)
	}
}

func TestHalve(t *testing.T) {
	m := image.NewRGBA(image.Rect(0, 0, 3, 2))
	copy(m.Pix, []uint8{
		0, 0, 0, 255, 100, 100, 100, 255, 9, 9, 9, 9,
		200, 200, 200, 255, 100, 100, 100, 255, 9, 9, 9, 9,
	})
	h := halve(m)
	if b := h.Bounds(); b.Dx() != 1 || b.Dy() != 1 {
		t.Fatalf("got %v; want 1×1", b)
	}
	if got := h.RGBAAt(0, 0); got != (color.RGBA{100, 100, 100, 255}) {
		t.Errorf("got %v; want the mean {100 100 100 255}", got)
	}
}

func FuzzCompress(f *testing.F) {
	f.Add(encodePNG(f, noise(40, 30)))
	var j bytes.Buffer
	jpeg.Encode(&j, noise(33, 17), nil)
	f.Add(j.Bytes())
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Compress(in, 2000)
		if err != nil {
			return
		}
		if len(s.JPEG) > 2000 {
			t.Errorf("got %d bytes; want ≤ 2000", len(s.JPEG))
		}
	})
}
