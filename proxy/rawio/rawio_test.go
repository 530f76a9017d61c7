package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection.
func pair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		done <- c
	}()
	a, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-done
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestReadWriteRoundTrip(t *testing.T) {
	a, b := pair(t)
	ra, rb := New(a), NewHeld(b)
	if ra == nil || rb == nil {
		t.Fatal("New returned nil for a TCP connection")
	}
	defer rb.Release()
	for _, size := range []int{1, 512, 64 << 10, 4 << 20} {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		errc := make(chan error, 1)
		go func() {
			n, err := ra.Write(msg)
			if err == nil && n != len(msg) {
				err = io.ErrShortWrite
			}
			errc <- err
		}()
		got := make([]byte, 0, size)
		buf := make([]byte, 16<<10)
		for len(got) < size {
			n, err := rb.Read(buf)
			if err != nil {
				t.Fatalf("size %d: read after %d bytes: %v", size, len(got), err)
			}
			got = append(got, buf[:n]...)
		}
		if err := <-errc; err != nil {
			t.Fatalf("size %d: write: %v", size, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("size %d: bytes differ", size)
		}
	}
}

func TestReadEOFAndDeadline(t *testing.T) {
	for name, mk := range map[string]func(net.Conn) *Conn{"New": New, "NewHeld": NewHeld} {
		a, b := pair(t)
		rb := mk(b)
		b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := rb.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: read past the deadline: %v, want a deadline error", name, err)
		}
		b.SetReadDeadline(time.Time{})
		a.Close()
		if n, err := rb.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("%s: read after the peer closed = %d, %v; want 0, EOF", name, n, err)
		}
		// EOF ended the open read: closing does not wait for a Release.
		b.Close()
	}
}

// TestReadSkipsTheEmptyRead plays requests and replies, one at a time:
// after a read that left the socket empty, the next Read must wait for
// input without a read that finds nothing first (one read attempt a
// request, where Go's raw reads make two), and miss nothing sent meanwhile.
func TestReadSkipsTheEmptyRead(t *testing.T) {
	a, b := pair(t)
	rb := NewHeld(b)
	defer rb.Release()
	const rounds = 200
	go func() {
		buf := make([]byte, 16)
		for i := range rounds {
			if _, err := a.Write([]byte{byte(i), byte(i)}); err != nil {
				return
			}
			if _, err := io.ReadFull(a, buf[:1]); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64)
	reads0, _ := rb.ReadState()
	for i := range rounds {
		got := 0
		for got < 2 {
			n, err := rb.Read(buf[got:])
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			got += n
		}
		if buf[0] != byte(i) || buf[1] != byte(i) {
			t.Fatalf("round %d: read %v, want [%d %d]", i, buf[:2], i, i)
		}
		if _, err := rb.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	// A read may come back empty when input arrived while the reader
	// was busy (its readiness then stands for input it already read):
	// rare with one request at a time, never one a round.
	if reads, _ := rb.ReadState(); reads-reads0 > rounds+rounds/4 {
		t.Fatalf("%d read attempts for %d requests read whole, want about one each", reads-reads0, rounds)
	}
}

// TestReleaseHandsTheSocketOver checks that after Release the connection
// reads through net.Conn again, missing nothing, and that a socket shut
// down while an open read is held (the reader busy) can be closed once the
// reader's next Read ends it.
func TestReleaseHandsTheSocketOver(t *testing.T) {
	a, b := pair(t)
	rb := NewHeld(b)
	buf := make([]byte, 64)
	a.Write([]byte("one"))
	if n, err := rb.Read(buf); err != nil || string(buf[:n]) != "one" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	rb.Release()
	a.Write([]byte("two"))
	b.SetReadDeadline(time.Now().Add(10 * time.Second)) // a hang detector
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "two" {
		t.Fatalf("net.Conn's Read after Release = %q, %v", buf[:n], err)
	}
	b.SetReadDeadline(time.Time{})

	a.Write([]byte("three"))
	if n, err := rb.Read(buf); err != nil || string(buf[:n]) != "three" {
		t.Fatalf("Read after Release = %q, %v", buf[:n], err)
	}
	rb.Shutdown()
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	if n, err := rb.Read(buf); n != 0 || err == nil {
		t.Fatalf("Read after Shutdown = %d, %v; want an error", n, err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second): // a hang detector
		t.Fatal("Close still waits after the reader's Read ended")
	}
}

// TestTryWriteNeverWaits fills the socket: TryWrite must return what the
// kernel took, without waiting for the reader.
func TestTryWriteNeverWaits(t *testing.T) {
	a, _ := pair(t)
	ra := New(a)
	big := make([]byte, 64<<20) // far more than socket buffers hold
	done := make(chan struct{})
	var n int
	var err error
	go func() {
		n, err = ra.TryWrite(big)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a hang detector, not a timing assertion
		t.Fatal("TryWrite waited for the reader")
	}
	if err != nil || n <= 0 || n >= len(big) {
		t.Fatalf("TryWrite = %d, %v; want a partial write of the %d bytes", n, err, len(big))
	}
}

func TestNewWithoutDescriptor(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if New(a) != nil {
		t.Fatal("New on a net.Pipe end: want nil (no file descriptor)")
	}
}
