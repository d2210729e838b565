//go:build unix || windows

package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestTryLock takes a directory's lock, fails to take it again while it is
// held (locks of two opens conflict as two processes' do), naming the
// holder, and takes it once it is released.
func TestTryLock(t *testing.T) {
	dir := t.TempDir()
	release, err := TryLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(dir)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v, want ErrHeld naming %s", err, dir)
	}
	if want := fmt.Sprintf("locked by process %d", os.Getpid()); !strings.Contains(err.Error(), want) && runtime.GOOS != "windows" { // Windows' locked bytes cannot be read
		t.Errorf("second lock: %v, want it to name the holder %s", err, want)
	}
	release()
	again, err := TryLock(dir)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	again()
}

// TestTryLockMissingDir checks the error for a directory that does not
// exist.
func TestTryLockMissingDir(t *testing.T) {
	dir := t.TempDir() + "/missing"
	if _, err := TryLock(dir); err == nil || errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), dir) {
		t.Errorf("TryLock(%s): %v, want an error naming it", dir, err)
	}
}

// TestLockFileWaits checks that LockFile waits while the lock is held and
// takes it once released.
func TestLockFileWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.lock")
	release, err := TryLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	took := make(chan func())
	go func() {
		r, err := LockFile(path)
		if err != nil {
			t.Error(err)
			r = func() {}
		}
		took <- r
	}()
	select {
	case r := <-took:
		r()
		t.Fatal("LockFile took a held lock")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case r := <-took:
		r()
	case <-time.After(10 * time.Second):
		t.Fatal("LockFile did not take the released lock")
	}
}
