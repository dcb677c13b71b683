// keeld: Keel's daemon inside every workspace container. Keel starts processes through it (exec,
// the files helpers, processes, terminals) instead of through the engine's exec API: one TCP
// connection per process on the workspace's own network, no engine round trips, no runc exec.
//
// Static (CGO off, standard library only): it needs nothing from the image, not even a libc. It is
// mounted read-only at /.keel/keeld and runs as the workspace's user, with the container's
// environment and working directory, so a process started through it is the process `docker exec`
// would start.
//
//	keeld init --verifier HEX -- CMD...   start the server detached, then become CMD (the container's command)
//	keeld serve [--detach] --verifier HEX  the server; --detach starts it in a new session and returns
//	                                       (exit code 3: a server listens already)
//
// Keel proves itself with a token whose SHA-256 is the verifier; the token itself is never in the
// container (its command line, environment, files or logs): only Keel, which derives it, has it.
package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Port is where the server listens on the container's addresses. Keel's previews refuse it.
const Port = 49983

// AlreadyRunning is `serve --detach`'s exit code when a server listens already: Keel, which could
// not reach it, learns that the container's address is what it cannot reach, not the daemon.
const AlreadyRunning = 3

func main() {
	if len(os.Args) < 2 {
		fail("usage: keeld init --verifier HEX -- CMD... | keeld serve [--detach] --verifier HEX")
	}
	switch os.Args[1] {
	case "init":
		verifier, rest := flags(os.Args[2:])
		if len(rest) == 0 {
			fail("init: no command after --")
		}
		// The server must not be the container's main process (its crash would end the workspace):
		// `serve --detach` forks it and exits, so it is re-parented to the container's init, and this
		// process becomes CMD.
		starter := exec.Command(self(), "serve", "--detach", "--verifier", verifier)
		if err := starter.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "keeld: the daemon did not start:", err)
		}
		path, err := exec.LookPath(rest[0])
		if err != nil {
			fail("init: " + err.Error())
		}
		fail("init: " + syscall.Exec(path, rest, os.Environ()).Error())
	case "serve":
		detachFlag := false
		args := os.Args[2:]
		if len(args) > 0 && args[0] == "--detach" {
			detachFlag, args = true, args[1:]
		}
		verifier, _ := flags(args)
		if detachFlag {
			if err := detach(verifier); err != nil {
				fail(err.Error())
			}
			return
		}
		if err := serve(verifier); err != nil {
			fail(err.Error())
		}
	default:
		fail("unknown command " + os.Args[1])
	}
}

// flags reads `--verifier HEX [--] rest...`.
func flags(args []string) (string, []string) {
	verifier := ""
	for len(args) > 0 {
		switch args[0] {
		case "--verifier":
			if len(args) < 2 {
				fail("--verifier needs a value")
			}
			verifier, args = args[1], args[2:]
		case "--":
			return check(verifier), args[1:]
		default:
			return check(verifier), args
		}
	}
	return check(verifier), args
}

func check(v string) string {
	if len(v) != 64 {
		fail("--verifier must be 64 hex digits")
	}
	return v
}

// detach starts `keeld serve` in a session of its own, its output discarded, and waits only for the
// fork: the server is re-parented to the container's init once this process is gone.
func detach(verifier string) error {
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", Port), 500*time.Millisecond); err == nil {
		c.Close()
		os.Exit(AlreadyRunning)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	cmd := exec.Command(self(), "serve", "--verifier", verifier)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

func self() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "/proc/self/exe"
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "keeld:", msg)
	os.Exit(127)
}
