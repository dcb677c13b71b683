package main

// The server: one TCP connection per request. The client sends one JSON line (the request, with the
// token), then frames; the server answers with frames. A frame is a type byte, a big-endian uint32
// length and that many bytes.

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Frames from the server.
const (
	frameStdout  = 1
	frameStderr  = 2
	frameStarted = 3 // payload: the process's pid, in decimal
	frameExit    = 4 // payload: its exit code in decimal (128+n for a signal n), then the connection ends
	frameError   = 5 // payload: why the request was refused, then the connection ends
)

// Frames from the client.
const (
	frameStdin  = 10
	frameEOF    = 11 // closes the process's stdin
	frameResize = 12 // payload: cols, rows as big-endian uint16
)

const (
	maxRequest  = 1 << 20
	maxFrame    = 1 << 20
	readBufSize = 64 << 10
)

type request struct {
	Token  string   `json:"token"`
	Op     string   `json:"op"` // exec | signal | ping
	Cmd    []string `json:"cmd"`
	Env    []string `json:"env"`
	Stdin  bool     `json:"stdin"`
	Tty    bool     `json:"tty"`
	Cols   uint16   `json:"cols"`
	Rows   uint16   `json:"rows"`
	Pid    int      `json:"pid"`
	Signal int      `json:"signal"`
}

func serve(verifier string) error {
	want, err := hex.DecodeString(verifier)
	if err != nil || len(want) != sha256.Size {
		return errors.New("--verifier must be 64 hex digits")
	}
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", Port))
	if err != nil {
		return err
	}
	// One port for both: a framed request starts with '{', anything else is HTTP (files.go).
	httpConns := &chanListener{conns: make(chan net.Conn), addr: ln.Addr()}
	go filesServer(want).Serve(httpConns)
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go route(c, want, httpConns)
	}
}

// route reads a connection's first byte and hands it to the framed protocol or to HTTP.
func route(c net.Conn, want []byte, httpConns *chanListener) {
	in := bufio.NewReaderSize(c, readBufSize)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	first, err := in.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	if first[0] == '{' {
		handle(c, in, want)
		return
	}
	c.SetReadDeadline(time.Time{})
	httpConns.conns <- &bufferedConn{Conn: c, in: in}
}

// bufferedConn is a connection whose first bytes were already read into `in`.
type bufferedConn struct {
	net.Conn
	in *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.in.Read(p) }

// chanListener is the net.Listener the HTTP server serves: the connections route() gives it.
type chanListener struct {
	conns chan net.Conn
	addr  net.Addr
}

func (l *chanListener) Accept() (net.Conn, error) { return <-l.conns, nil }
func (l *chanListener) Close() error              { return nil }
func (l *chanListener) Addr() net.Addr            { return l.addr }

// conn writes frames from several goroutines, one frame at a time.
type conn struct {
	net.Conn
	mu sync.Mutex
}

func (c *conn) frame(kind byte, payload []byte) error {
	buf := make([]byte, 5+len(payload))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(payload)))
	copy(buf[5:], payload)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.Write(buf)
	return err
}

func (c *conn) refuse(msg string) {
	c.frame(frameError, []byte(msg))
	c.Close()
}

func handle(raw net.Conn, in *bufio.Reader, want []byte) {
	c := &conn{Conn: raw}
	if tcp, ok := raw.(*net.TCPConn); ok {
		tcp.SetNoDelay(true)
	}
	defer func() {
		// A bug in one request must not end the daemon.
		if r := recover(); r != nil {
			c.refuse(fmt.Sprint("internal error: ", r))
		}
	}()
	line, err := readLine(in)
	if err != nil {
		c.refuse("no request")
		return
	}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		c.refuse("the request is not JSON")
		return
	}
	got := sha256.Sum256([]byte(req.Token))
	if subtle.ConstantTimeCompare(got[:], want) != 1 {
		c.refuse("unauthorized")
		return
	}
	raw.SetReadDeadline(time.Time{})
	switch req.Op {
	case "ping":
		c.frame(frameExit, []byte("0"))
		c.Close()
	case "signal":
		signal(c, req)
	case "exec":
		if len(req.Cmd) == 0 {
			c.refuse("no command")
			return
		}
		if req.Tty {
			runTty(c, in, req)
		} else {
			run(c, in, req)
		}
	default:
		c.refuse("unknown op")
	}
}

func readLine(in *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, more, err := in.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, part...)
		if len(line) > maxRequest {
			return nil, errors.New("request too long")
		}
		if !more {
			return line, nil
		}
	}
}

// signal sends a signal to a process group and its leader (the kill of everything a command started).
func signal(c *conn, req request) {
	defer c.Close()
	if req.Pid <= 1 || req.Signal <= 0 || req.Signal > 64 {
		c.refuse("bad pid or signal")
		return
	}
	sig := syscall.Signal(req.Signal)
	errGroup := syscall.Kill(-req.Pid, sig)
	errLeader := syscall.Kill(req.Pid, sig)
	// Exit 1 when neither exists any more (the caller's "kill if still there" is then done).
	code := "0"
	if errGroup != nil && errLeader != nil {
		code = "1"
	}
	c.frame(frameExit, []byte(code))
}

// frameReader reads client frames into one buffer: a frame's bytes are valid until the next read.
type frameReader struct {
	in  *bufio.Reader
	buf []byte
}

func (r *frameReader) next() (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r.in, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxFrame {
		return 0, nil, errors.New("frame too large")
	}
	if uint32(cap(r.buf)) < n {
		r.buf = make([]byte, n)
	}
	body := r.buf[:n]
	if _, err := io.ReadFull(r.in, body); err != nil {
		return 0, nil, err
	}
	return head[0], body, nil
}

func command(req request) *exec.Cmd {
	cmd := exec.Command(req.Cmd[0], req.Cmd[1:]...)
	// The container's environment (what `docker exec` gives) plus the request's.
	cmd.Env = append(os.Environ(), req.Env...)
	return cmd
}

func exitCode(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
}

// startFailed answers a command that could not start as a shell would: a message and 126 or 127.
func startFailed(c *conn, err error) {
	code := 126
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		code = 127
	}
	c.frame(frameStarted, []byte("0"))
	c.frame(frameStderr, []byte("keeld: "+err.Error()+"\n"))
	c.frame(frameExit, []byte(strconv.Itoa(code)))
	c.Close()
}

// run starts a process in a process group of its own, streams its output and, with req.Stdin,
// feeds it the client's stdin frames. The exit frame comes when the process has exited and its
// output pipes have closed (a background child holding them keeps the connection open, as the
// engine's exec does). A client that goes away closes the pipes: the process sees EOF and EPIPE.
func run(c *conn, in *bufio.Reader, req request) {
	cmd := command(req)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, outW, err := os.Pipe()
	if err != nil {
		c.refuse(err.Error())
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		c.refuse(err.Error())
		return
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	var inW *os.File
	if req.Stdin {
		var inR *os.File
		if inR, inW, err = os.Pipe(); err != nil {
			c.refuse(err.Error())
			return
		}
		cmd.Stdin = inR
		defer inR.Close()
	}
	startErr := cmd.Start()
	outW.Close()
	errW.Close()
	if startErr != nil {
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		startFailed(c, startErr)
		return
	}
	if cmd.Stdin != nil {
		cmd.Stdin.(*os.File).Close()
	}
	c.frame(frameStarted, []byte(strconv.Itoa(cmd.Process.Pid)))

	var output sync.WaitGroup
	output.Add(2)
	pump := func(r *os.File, kind byte) {
		defer output.Done()
		defer r.Close()
		buf := make([]byte, readBufSize)
		for {
			n, err := r.Read(buf)
			if n > 0 && c.frame(kind, buf[:n]) != nil {
				return
			}
			if err != nil {
				return
			}
		}
	}
	go pump(outR, frameStdout)
	go pump(errR, frameStderr)

	// The client's frames: stdin, its end; the connection's end is the client gone.
	go func() {
		frames := frameReader{in: in}
		for {
			kind, body, err := frames.next()
			if err != nil {
				if inW != nil {
					inW.Close()
				}
				outR.Close()
				errR.Close()
				return
			}
			switch kind {
			case frameStdin:
				if inW != nil {
					if _, err := inW.Write(body); err != nil {
						inW.Close()
					}
				}
			case frameEOF:
				if inW != nil {
					inW.Close()
				}
			}
		}
	}()

	state, _ := cmd.Process.Wait()
	output.Wait()
	code := -1
	if state != nil {
		code = exitCode(state)
	}
	c.frame(frameExit, []byte(strconv.Itoa(code)))
	c.Close()
}

// ReadFrom lets the HTTP server's io.Copy of a file reach the TCP connection's own ReadFrom (sendfile).
func (b *bufferedConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(b.Conn, r) }
