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
	ra, rb := New(a), New(b)
	if ra == nil || rb == nil {
		t.Fatal("New returned nil for a TCP connection")
	}
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
	a, b := pair(t)
	rb := New(b)
	b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := rb.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a deadline error", err)
	}
	b.SetReadDeadline(time.Time{})
	a.Close()
	if n, err := rb.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer closed = %d, %v; want 0, EOF", n, err)
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
