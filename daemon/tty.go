package main

// Terminals: a process on a pseudo-terminal of its own (what `docker exec -it` gives), opened from
// /dev/ptmx with the kernel's ioctls (the standard library has no pty package).

import (
	"bufio"
	"encoding/binary"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

func ioctl(fd uintptr, req uintptr, arg uintptr) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, req, arg); e != 0 {
		return e
	}
	return nil
}

// openPty returns the master and the terminal (slave) side of a new pseudo-terminal.
func openPty() (*os.File, *os.File, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var unlock int32
	if err := ioctl(master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); err != nil {
		master.Close()
		return nil, nil, err
	}
	var n uint32
	if err := ioctl(master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); err != nil {
		master.Close()
		return nil, nil, err
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, tty, nil
}

func resize(f *os.File, cols, rows uint16) {
	if cols == 0 || rows == 0 {
		return
	}
	ws := struct{ rows, cols, x, y uint16 }{rows, cols, 0, 0}
	ioctl(f.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws)))
}

// runTty starts the process as the leader of a new session on the terminal. Its output arrives as
// stdout frames, stdin frames are typed, resize frames set the window; a client that goes away
// closes the master, and the session gets SIGHUP as with a closed `docker exec -it`.
func runTty(c *conn, in *bufio.Reader, req request) {
	master, tty, err := openPty()
	if err != nil {
		c.refuse("no terminal: " + err.Error())
		return
	}
	resize(master, req.Cols, req.Rows)
	cmd := command(req)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	startErr := cmd.Start()
	tty.Close()
	if startErr != nil {
		master.Close()
		startFailed(c, startErr)
		return
	}
	c.frame(frameStarted, []byte(strconv.Itoa(cmd.Process.Pid)))

	output := make(chan struct{})
	go func() {
		defer close(output)
		buf := make([]byte, readBufSize)
		for {
			n, err := master.Read(buf)
			if n > 0 && c.frame(frameStdout, buf[:n]) != nil {
				return
			}
			if err != nil { // EIO once every holder of the terminal is gone
				return
			}
		}
	}()
	go func() {
		frames := frameReader{in: in}
		for {
			kind, body, err := frames.next()
			if err != nil {
				master.Close()
				return
			}
			switch kind {
			case frameStdin:
				master.Write(body)
			case frameResize:
				if len(body) == 4 {
					resize(master, binary.BigEndian.Uint16(body[0:2]), binary.BigEndian.Uint16(body[2:4]))
				}
			}
		}
	}()

	state, _ := cmd.Process.Wait()
	code := -1
	if state != nil {
		code = exitCode(state)
	}
	// What the process printed last is on its way; the master closes once it is read (or the client left).
	select {
	case <-output:
	case <-time.After(200 * time.Millisecond): // a child still holds the terminal: the process is done
	}
	master.Close()
	c.frame(frameExit, []byte(strconv.Itoa(code)))
	c.Close()
}
