package disk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// PoolSize is how many empty images, formatted at the quota, Disks keeps
// ready: a person's first disk is one of them renamed, and mkfs.ext4 (15
// to 20 ms of a first disk's 30) runs in the background to make the next,
// not in the person's first message.
const PoolSize = 2

// poolDir is where, under the disks' directory, the ready images are.
const poolDir = "pool"

// poolIdle is how long after a person's first disk the pool waits before
// making an image: while newcomers come one after another, making images
// ahead would only slow their own (measured: 39 ms a first disk with the
// pool filling beside it, 31 ms without a pool, 23 ms from the pool).
const poolIdle = time.Second

// pool keeps PoolSize images of the quota ready in dir.
type pool struct {
	dir  string
	size int64

	mu     sync.Mutex
	closed bool
	stop   context.CancelFunc // the filling's, while it fills
	taken  time.Time          // the last first disk's
	wg     sync.WaitGroup
}

// openPool readies the pool in dir, for images of size bytes: what an
// earlier runner left of another size, or half made, is removed; the
// pool is filled in the background.
func (d *Disks) openPool() error {
	dir := filepath.Join(d.dir, poolDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if info, err := e.Info(); err != nil || !strings.HasSuffix(e.Name(), ".img") || info.Size() != d.quota {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	d.pool = &pool{dir: dir, size: d.quota}
	d.pool.fill(d)
	return nil
}

// ready are the pool's whole images.
func (p *pool) ready() []string {
	names, _ := filepath.Glob(filepath.Join(p.dir, "*.img"))
	return names
}

// take renames one of the pool's images to image, and reports whether
// there was one; the pool is filled again in the background, once no
// first disk was made for poolIdle.
func (p *pool) take(d *Disks, image string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.taken = time.Now()
	defer p.fillLocked(d)
	for _, name := range p.ready() {
		if info, err := os.Stat(name); err != nil || info.Size() != p.size {
			continue
		}
		if os.Rename(name, image) == nil {
			return true
		}
	}
	return false
}

// fill makes images until the pool holds PoolSize, in the background,
// unless it is being filled already.
func (p *pool) fill(d *Disks) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fillLocked(d)
}

// fillLocked is fill; p.mu is held.
func (p *pool) fillLocked(d *Disks) {
	if p.stop != nil || p.closed {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	p.wg.Go(func() {
		defer func() { p.mu.Lock(); p.stop = nil; p.mu.Unlock(); stop() }()
		for len(p.ready()) < PoolSize && p.waitIdle(ctx) {
			name := make([]byte, 8)
			_, _ = rand.Read(name)
			if err := makeImage(ctx, filepath.Join(p.dir, hex.EncodeToString(name)+".img"), p.size); err != nil {
				if ctx.Err() == nil {
					d.log.Warn().Err(err).Msg("no disk image made ahead; people's first disks are made when they need them")
				}
				return
			}
		}
	})
}

// waitIdle waits until no first disk was made for poolIdle, and reports
// false when ctx (the filling's) ends first.
func (p *pool) waitIdle(ctx context.Context) bool {
	for {
		p.mu.Lock()
		wait := poolIdle - time.Since(p.taken)
		p.mu.Unlock()
		if wait <= 0 {
			return ctx.Err() == nil
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// close stops filling the pool; what it holds stays for the next runner.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	if p.stop != nil {
		p.stop()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
