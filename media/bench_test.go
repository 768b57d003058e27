package media_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/textslash/textslash/contract/bus"
)

// BenchmarkServeImage: signed GETs of one 300 KB image over loopback, from
// as many clients as GOMAXPROCS (each its own keep-alive connection),
// the load generator on the same machine.
func BenchmarkServeImage(b *testing.B) {
	store, srv := serve(b)
	data := noisyJPEG(b, 300_000)
	img, err := bus.PutImage(b.Context(), store, "image/jpeg", data)
	if err != nil {
		b.Fatal(err)
	}
	url := srv.URL + signed("/images/"+img.ID+".jpeg")
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || n != int64(len(data)) {
				b.Errorf("GET: %d, %d bytes", resp.StatusCode, n)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "GETs/s")
}

// noisyJPEG is a JPEG of random pixels of about size bytes.
func noisyJPEG(b *testing.B, size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	for side := 200; ; side += 20 {
		m := image.NewRGBA(image.Rect(0, 0, side, side))
		for i := range m.Pix {
			m.Pix[i] = uint8(rng.Uint32())
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 75}); err != nil {
			b.Fatal(err)
		}
		if buf.Len() >= size {
			return buf.Bytes()
		}
	}
}
