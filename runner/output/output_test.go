package output

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"
)

// A program's output is read straight into its capped buffer: os/exec's
// copy otherwise takes a 32 KB buffer for every program a run starts (14%
// of the bytes textslash allocated per message, sandbox off).
func TestCappedBufferReadsWithoutACopyBuffer(t *testing.T) {
	// io.Discard's shared buffer (8 KB, in a sync.Pool) is made by its
	// first use in the process, not per program: made here, before
	// measuring, as any earlier test of the package would have made it.
	if _, err := io.Copy(io.Discard, io.LimitReader(bytes.NewReader([]byte("x")), 1)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		max, write, want int
	}{{1 << 20, 5, 5}, {4, 10, 4}, {0, 3, 0}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, _ = w.Write(bytes.Repeat([]byte("x"), tc.write))
			w.Close()
		}()
		buf := &CappedBuffer{Max: tc.max}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		n, err := io.Copy(buf, r)
		runtime.ReadMemStats(&after)
		r.Close()
		if err != nil || n != int64(tc.write) {
			t.Errorf("max %d: copied %d, %v; want %d", tc.max, n, err, tc.write)
		}
		if buf.Len() != tc.want || buf.Truncated() != (tc.write > tc.max) {
			t.Errorf("max %d, %d written: kept %d (truncated %v); want %d", tc.max, tc.write, buf.Len(), buf.Truncated(), tc.want)
		}
		// A copy buffer is 32 KB. Under 16 KB leaves room for io.Discard's
		// 8 KB made again when a collection emptied its pool in between
		// (it failed so once: 9,776 bytes).
		if got := after.TotalAlloc - before.TotalAlloc; got >= 16<<10 {
			t.Errorf("max %d: reading %d bytes allocated %d bytes; want under 16 KB (no 32 KB copy buffer)", tc.max, tc.write, got)
		}
	}
}
